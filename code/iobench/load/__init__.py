"""Load: every load generator as a driver (drivers: a LoadSpec in, a command line out, its output parsed
into a LoadResult), the Java clients it drives (clientload), idle connections held beside a server
(idle) and the RPC frames (rpcwire). Imports run/ and servers/; knows no dataset."""
