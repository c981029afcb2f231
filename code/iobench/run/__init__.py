"""What every run shares: the one lifecycle (runner), a server process from start to stop (lifecycle,
procs, cgroup), sampling (sampler, probes), links that are not loopback (netlink), limits, metadata,
result files, profiles and the JVM's logs. Nothing here knows a particular experiment; it imports only
servers/."""
