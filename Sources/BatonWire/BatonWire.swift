// Filled in by the wire codec.
