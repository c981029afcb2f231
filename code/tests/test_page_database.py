"""The analysis behind book/synthesis/database.md (iobench/book/pages/database.py): on the replayed run, every value the
page glues, as prose, with its claims holding; on small variants (one repeat, equal ends, zeros, one server, a run
without the pool sweep), values that still read as prose, or the claim the variant breaks. The smoke capture's own
sentences are read in test_db_servers.py."""

import pytest
from conftest import ROOT, changed, glued_in_prose, reads_as_prose, rows

from iobench import registry
from iobench.book.claims import ClaimBroken
from iobench.book.pages import database as page, text

PAGE = ROOT / "book" / "synthesis" / "database.md"


@pytest.fixture(scope="module")
def db():
    return registry.obtain("db-models", "replay")


@pytest.fixture(scope="module")
def pin():
    return registry.obtain("db-pinning", "replay")


@pytest.fixture(scope="module")
def ol():
    return registry.obtain("db-openloop", "replay")


def test_the_replayed_runs_give_every_name_the_page_pastes_and_their_claims_hold(db, pin, ol):
    values = {**page.chapter(db), **page.pinning(pin), **page.open_loop(ol)}
    pasted = glued_in_prose(PAGE)
    assert pasted <= set(values), sorted(pasted - set(values))
    reads_as_prose(values)


def test_the_pinning_table_has_a_row_per_variant_and_the_pinned_one_alone_says_so(pin):
    T = page.pinning_table(pin)
    assert [i[0] for i in T.index] == list(page.VARIANTS)
    assert [i[0] for i in T.index if i[3] == "yes"] == [page.PINNED]
    assert {c[0] for c in T.columns} == set(page.ROUTE) and not T.isna().any().any()


def test_the_pinning_variants_are_the_servers_the_manifest_says(pin):
    from iobench.servers import manifest
    for server, (jdk, driver) in page.VARIANTS.items():
        model = manifest.get(server).model
        assert server == "java-db-tomcat-vt" or (f"JDK {jdk}" in model and f"pgjdbc {driver[:4]}" in model), model


def test_pinning_reads_as_prose_on_one_repeat_and_without_the_pinned_variant(pin):
    reads_as_prose(page.pinning(rows(pin, lambda df: df.repeat == 1), check=False))
    values = page.pinning(rows(pin, lambda df: df.server != page.PINNED), check=False)
    reads_as_prose(values)
    assert text(values["db_pin_many_rate"]) == "n/a"


def test_data_in_which_the_pinned_variant_queries_many_at_once_break_the_pinning_sentence(pin):
    unpinned = changed(pin, lambda df: df.server == page.PINNED, db_query_us=20_000.0)
    with pytest.raises(ClaimBroken, match="one query out at a time"):
        page.pinning(unpinned)


def test_the_views_hold_one_row_per_server_and_x(db):
    for path in page.ROUTE:
        C, P = page.by_connections(db, path), page.by_pool(db, path)
        assert not C.duplicated(["server", "connections"]).any() and not P.duplicated(["server", "db_pool"]).any()
        assert set(C.connections) == {16, 64, 256, 1024} and set(P.db_pool) == {2, 4, 8, 16, 64, 256}
        assert len(page.view(db, path).summary()) == len(C) and len(page.view(db, path, "pool").summary()) == len(P)


def test_one_repeat_reads_as_prose(db):
    values = page.chapter(rows(db, lambda df: df.repeat == 1), check=False)  # a claim may not hold on one repeat
    reads_as_prose(values)
    assert text(values["db_repeats"]) == "one" and text(values["db_spread_max"]) == "n/a"


def test_one_server_reads_as_prose(db):
    values = page.chapter(rows(db, lambda df: df.server == "c-db-epoll"), check=False)
    reads_as_prose(values)


def test_no_pool_sweep_reads_as_prose(db):
    own = page.pools(db)
    values = page.chapter(rows(db, lambda df: df.db_pool == df.server.map(own)), check=False)
    reads_as_prose(values)


def test_no_503s_and_no_wait_read_as_prose(db):
    calm = changed(db, lambda df: df.index == df.index, non2xx=0, db_wait_us=0.0)
    values = page.chapter(calm, check=False)
    reads_as_prose(values)
    assert text(values["db_shed_said"]) == "No server answered a request with a 503 at its own pool."


def test_data_in_which_a_large_pool_wins_break_the_pool_sentences(db):
    won = changed(db, lambda df: (df.path == page.MANY) & (df.db_pool == 256), rps=1e6)
    with pytest.raises(ClaimBroken, match="best pool held at most 16"):
        page.pool_sweep(won)


def test_data_in_which_a_pooled_server_wins_break_the_rate_sentence(db):
    won = changed(db, lambda df: df.server == "java-db-webflux", rps=1e6)
    with pytest.raises(ClaimBroken, match="both pipelined servers answered more than any other"):
        page.rates(won)


def test_data_in_which_webflux_outruns_vertx_break_the_rpc_sentence(db):
    won = changed(db, lambda df: df.server == "java-db-webflux", rps=1e6)
    with pytest.raises(ClaimBroken, match="of the two servers on Netty"):
        page.rpc_revisited(won)


def test_the_pool_figure_draws_each_server_in_its_look_against_the_pool_s_size(db):
    import matplotlib
    import matplotlib.colors as mcolors
    from iobench.book import plots
    fig = plots.against(page.view(db, page.MANY, "pool"), "db_pool", "ok_rps", "answers per second",
                        "database connections in the pool", "Twenty rows per request, by pool size")
    drawn = {label: h[0] for ax in fig.axes for h, label in zip(*ax.get_legend_handles_labels())
             if label in page.servers(db)}
    assert set(drawn) == set(page.servers(db))
    for server, line in drawn.items():
        assert mcolors.to_hex(line.get_color()) == mcolors.to_hex(plots.style(server)["color"])
        assert list(line.get_xdata()) == [2, 4, 8, 16, 64, 256]
    assert "db-models" in plots.caption(fig)
    matplotlib.pyplot.close("all")


def test_the_open_table_has_a_row_per_server_and_no_server_on_time_where_requests_were_lost(ol):
    T = page.open_table(ol)
    assert list(T.index) == page.servers(ol)
    lost_everywhere = T["on time up to (requests/s)"].isna()
    assert list(T.index[lost_everywhere]) == ["c-db-threadpool"]


@pytest.mark.parametrize("keep", [lambda df: df.repeat == 1, lambda df: df.server == "c-db-epoll",
                                  lambda df: df.loop == "closed", lambda df: df.fraction <= 0.5],
                         ids=["one repeat", "one server", "no open point", "below capacity only"])
def test_the_open_loop_reads_as_prose_on_less_data(ol, keep):
    reads_as_prose(page.open_loop(rows(ol, keep), check=False))
    page.open_table(rows(ol, keep))


def test_data_in_which_c_db_epoll_keeps_up_break_the_open_loop_sentences(ol):
    kept = changed(ol, lambda df: (df.server == "c-db-epoll") & (df.fraction == 1.0), rps=1e5)
    with pytest.raises(ClaimBroken, match="c-db-epoll fell behind"):
        page.open_loop(kept)


def test_data_in_which_c_db_threadpool_serves_every_connection_break_its_sentence(ol):
    fine = changed(ol, lambda df: df.server == "c-db-threadpool", errors_timeout=0)
    with pytest.raises(ClaimBroken, match="timed out at every load"):
        page.open_loop(fine)
