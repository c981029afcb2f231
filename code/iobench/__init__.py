"""iobench: the book's benchmark harness.

Start a server from the manifest, check that it answers correctly, drive load with a
load generator, sample the server's and the generator's CPU and memory from /proc,
and capture tidy results with their metadata and the tools' raw output.

Layers, top to bottom; a module imports only from its own folder and the folders below it
(code/tests/test_layers.py holds the code to this; code/README.md walks one run through them):

    __main__.py    the command line: list, run, serve, battery, probe, show, obtain
    book/          what the pages call: phrases, plots, looks, flames, mine, lab, syllabus, claims
    registry.py    every dataset by name -> its kind (plans, experiment, reader); obtain
    kinds/         one package per experiment kind: http, openloop, echo, clients, rpc (rpc builds on openloop)
    data/          Dataset (summary, origin, one value for prose) and report
    load/          drivers (wrk, ab, iom-openloop, iom-echoload, vegeta, the Java clients), idle, rpcwire
    run/           runner (the one lifecycle), lifecycle, procs, cgroup, sampler, probes, netlink, limits,
                   metadata, results, profiles, jvmlog
    servers/       manifest, http (the one response), battery; baselines/ and demos/ hold small servers
"""
