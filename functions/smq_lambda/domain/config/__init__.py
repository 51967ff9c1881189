"""The operators' documents: the configuration document and each of its sections (teams and quotas, costs, spot, training plans, warm pools), and the bounds they accept."""
