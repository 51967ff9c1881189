"""The `smq` command line (entry point `smq.cli.main:main`)."""
