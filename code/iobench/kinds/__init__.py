"""One package per experiment kind, each whole: its plans (what a dataset measures), its experiment (the
hooks the runner calls), its columns and its reader. A kind imports the layers below it (data, load,
run, servers) and no other kind, except rpc, which builds on openloop's experiment and dataset."""
