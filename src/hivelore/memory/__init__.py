"""Lessons: the rules (model, scope, guard, recall) and the service over the tiers that keep them."""
