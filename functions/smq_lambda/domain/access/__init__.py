"""Who may do what: admin principals, per-principal rules, and who owns a job."""
