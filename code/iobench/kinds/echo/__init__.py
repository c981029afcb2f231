"""Echo: the Mina vs Netty studies (echoplans), measured over loopback and a veth link (echorun) and
read back with their statistics, packet traces and allocation profiles (echo)."""
