"""What training costs: prices and where they come from, what attempts spent and are expected to spend, and the teams' budgets."""
