"""What the judge and the runner share: the wire protocol, the exchange arena (and its CUDA VMM allocation),
the stream gates, and the judge's end of the runner's channel."""
