"""RPC providers: source write-up 004's providers at their points, measured open-loop with the open-loop kind's
experiment, plus keep-alive, tail and flame graphs."""
