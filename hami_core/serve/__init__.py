"""What both daemons serve over HTTP: the generic read-only endpoint server and the metrics plumbing."""
