"""One package per experiment kind, each whole and each of the same three modules: plans.py (what each dataset
measures: PLANS), experiment.py (the hooks the runner calls) and dataset.py (its columns, the keys of a point,
its summary and its reader). A kind imports the layers below it (data, load, run, servers) and no other
kind, except rpc, which builds on openloop's experiment and dataset."""
