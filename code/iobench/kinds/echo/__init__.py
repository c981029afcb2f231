"""Echo: the Mina vs Netty studies, measured over loopback and a veth link and read back with their read
statistics, packet traces and allocation profiles."""
