"""What hivelore writes into each agent's files, and what it reads back for `doctor`."""
