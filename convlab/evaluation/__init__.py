"""Labelled data, systems, metrics, significance, budgets, run folders, figures."""
