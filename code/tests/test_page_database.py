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



def test_the_replayed_run_gives_every_name_the_page_pastes_and_its_claims_hold(db):
    values = page.chapter(db)
    pasted = glued_in_prose(PAGE)
    assert pasted <= set(values), sorted(pasted - set(values))
    reads_as_prose(values)


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
