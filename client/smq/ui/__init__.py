"""`smq ui`: a local web server for the queue's pages (server.py), its static files (static/)."""
