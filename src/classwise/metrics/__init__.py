"""Worst-class metrics (Bitterwolf et al., 2022)."""
