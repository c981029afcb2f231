# IO Models, Measured: the two commands are `make book` and `make test`.
SHELL  := /bin/bash
.SHELLFLAGS := -euo pipefail -c
PYTHON ?= python3
VENV   := .venv
STAMP  := $(VENV)/.stamp

# Kernels and Jupyter data live in the project's environment, never in $HOME.
export JUPYTER_DATA_DIR := $(abspath $(VENV))/share/jupyter
export PATH := $(abspath $(VENV))/bin:$(PATH)
export PYTHONPATH := $(abspath code)

.PHONY: book book-student lint test test-live test-platform book-checks system setup ready vegeta kernels constraints code unit site-test glue-check glue-snapshot lab bench mine clean distclean help

help:
	@echo "make book   install what is missing, build code/ and the site into _build/html"
	@echo "make test   run every test: unit tests, a fresh book build, the site in Chromium"
	@echo "make book-student   the site with every solution removed, into _build/student/_build/html"
	@echo "make lab    open the chapters in JupyterLab"
	@echo "make bench DATASET=baselines PROFILE=full [OVERWRITE=1]   measure a dataset into data/"

## make book: everything a reader needs, then the site (only the pages whose inputs changed run again;
## make book ALL=1 runs every page).
book: ready
	$(if $(ALL),BOOK_ALL=1 )code/tools/build-book

## make book-student: the site without any solution, for a class (from the book just built; nothing runs again).
book-student: book
	python code/tools/student_book.py . _build/student

## System packages (apt-get as root; otherwise the exact command is printed).
system:
	code/tools/install-system-deps
	code/tools/check-toolchain

## Virtual environment with pinned packages and the three kernels.
# requirements.txt names the packages; constraints.txt pins everything they pull in.
setup: system $(STAMP) vegeta
# What the pages need, the two slow steps side by side (none measures anything): the environment with its
# kernels, and code/ (its C build in parallel beside its Java modules, which from nothing build in one Maven start).
# Each step's output is shown whole when it ends. On the book's 2-core machine from a clean clone, alone: the
# environment 21 s with uv (installed by pip, from an empty cache in .cache/uv; pip's resolver and installs took
# 58 s from a warm cache), code/ 42 s with its three Maven modules one after another. Together, as `make ready`
# runs them: 38 s with the modules one after another, 30 s with one Maven start beside the C build (2026-11-29).
# vegeta (30 s) is built only for what measures or tests with it (test, test-live, bench, mine): no page runs it.
ready: system
	$(MAKE) -j2 --output-sync=target $(STAMP) code
$(STAMP): requirements.txt constraints.txt code/tools/install_kernels.py code/tools/find-jdk
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt uv
	UV_CACHE_DIR=$(abspath .cache/uv) $(VENV)/bin/uv pip install --python $(VENV)/bin/python --quiet \
	    -r requirements.txt -c constraints.txt
	$(VENV)/bin/python code/tools/install_kernels.py
	touch $@
# vegeta, the open-loop generator iom-openloop is checked against: Go module proxy, pinned, into .cache/go.
vegeta:
	code/tools/install-vegeta
kernels: $(STAMP)
	$(VENV)/bin/python code/tools/install_kernels.py

# After changing requirements.txt: resolve it afresh in a scratch environment (so nothing
# left over in .venv gets pinned), write its versions to constraints.txt, reinstall .venv.
# It resolves under the oldest Python the book supports (OLDEST_PYTHON, Debian 12's own), so that
# no pin needs a newer one; PIN_PYTHON names that interpreter where it is not /usr/bin/python3.
OLDEST_PYTHON := 3.11.2
PIN_PYTHON ?= /usr/bin/python3
constraints:
	@v=$$($(PIN_PYTHON) -c 'import platform; print(platform.python_version())' 2>/dev/null || true); \
	if [ "$$v" != "$(OLDEST_PYTHON)" ]; then \
	  echo "make constraints resolves under Python $(OLDEST_PYTHON), the oldest the book supports;" \
	       "$(PIN_PYTHON) is $${v:-missing}: set PIN_PYTHON=/path/to/python$(OLDEST_PYTHON)" >&2; exit 2; fi
	rm -rf .venv-pin && $(PIN_PYTHON) -m venv .venv-pin
	.venv-pin/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	{ sed -n '/^#/p' constraints.txt 2>/dev/null || true; \
	  .venv-pin/bin/python -m pip freeze --all --exclude-editable --disable-pip-version-check | \
	  grep -v -e '^pip==' -e ' @ ' -e '^-e '; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	rm -rf .venv-pin
	$(MAKE) setup

code:
	$(MAKE) -C code all

## make test: every check that needs no live measurement of the book, within CI's budget.
# The book is executed once, as a reader's `make book` executes it (from the captured data): the
# student edition, the site test in Chromium and the glued numbers all read that one build.
# The harness's live side is covered by the unit tests (one smoke capture per experiment kind, read
# by each page's reader: test_smoke_captures.py); `make test-live` executes every page live.
test: ready vegeta lint unit
	code/tools/build-book
	$(MAKE) book-checks BUILT=.

## make test-live: the slow, live checks (before capturing data, after changing the harness or a
# page's cells): the whole book executed with every benchmark cell measuring briefly
# (IOBENCH_PROFILE=smoke) from scratch into _build/test-live/, its student edition and site checked
# as make test checks the replay build's, then the tests marked live (pytest -m live).
test-live: ready vegeta
	rm -rf _build/test-live _build/test-live-student
	IOBENCH_PROFILE=smoke code/tools/build-book . _build/test-live
	$(MAKE) book-checks BUILT=_build/test-live GLUE=
	python -m pytest -q --durations=15 code/tests -m live

## make test-platform: the README's two commands on a clean Debian 12 root made with debootstrap
# (root; outside both test targets; the two commands' time on a new machine, plus debootstrap). PLATFORM_COMMANDS="make book" for less.
PLATFORM_COMMANDS ?= make book;make test
test-platform:
	IFS=';' read -ra cmds <<< "$(PLATFORM_COMMANDS)"; code/tools/platform-check "$${cmds[@]}"

# What make test and make test-live check of a built book (BUILT: the folder build-book wrote):
# the student edition, the site and its student edition in Chromium, and (GLUE=1, the replay
# build only) every glued value against book/glue-values.json.
BUILT ?= .
GLUE ?= 1
book-checks:
	rm -rf $(BUILT)/_build/student
	python code/tools/student_book.py $(BUILT) $(BUILT)/_build/student
	$(MAKE) site-test SITE=$(BUILT)/_build/html STUDENT=$(BUILT)/_build/student/_build/html
	$(if $(GLUE),python code/tools/glue_values.py $(BUILT) --check book/glue-values.json)

## The numbers in the prose: a replay build must glue exactly the values of book/glue-values.json.
# After re-measuring a dataset (or changing what a page computes on purpose), `make glue-snapshot`
# and commit the snapshot with it: its diff shows every number of the prose that moved.
glue-check: book
	python code/tools/glue_values.py . --check book/glue-values.json
glue-snapshot: book
	python code/tools/glue_values.py . > book/glue-values.json

## make lint: the harness, its tests and the tools as ruff.toml asks (pinned in requirements.txt).
lint: setup
	ruff check code/iobench code/tests code/tools

unit:
	python -m pytest -q --durations=25 code/tests -m "not site and not live"
	$(MAKE) -C code test-java

SITE ?= _build/html
STUDENT ?= _build/student/_build/html
site-test:
	BOOK_SITE=$(abspath $(SITE)) STUDENT_SITE=$(abspath $(STUDENT)) python -m pytest -q code/tests -m site

DATASET ?= baselines
PROFILE ?= smoke
bench: ready vegeta
	code/bin/iobench run $(DATASET) --profile $(PROFILE) $(if $(OVERWRITE),--overwrite)

## make mine: every results page's datasets measured on this machine into a folder of your own (MINE, default
## ~/iom-runs; ONLY=java/rpc for one page's), about half an hour; then IOBENCH_MINE=$(MINE) make book shows
## each page's claims on both machines. The plan and its time come first, a dataset this machine cannot measure
## is skipped with the reason, the rest go on.
MINE ?= ~/iom-runs
mine: ready vegeta
	code/bin/iobench mine --dest $(MINE) $(if $(ONLY),--only $(ONLY))

# As root (a container, a VM) Jupyter refuses to start without --allow-root: given only then.
LAB_PORT ?= 8888
lab: setup
	jupyter lab --notebook-dir=. --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) \
	  $$([ "$$(id -u)" = 0 ] && echo --allow-root) book/

clean:
	rm -rf _build
	$(MAKE) -C code clean
distclean: clean
	rm -rf $(VENV)
