"""Readers, vocabularies and data-set locations (numpy/torch only at the edges)."""

from calib_metrics.data.locations import find_dataset, shared_data_dir

__all__ = ["find_dataset", "shared_data_dir"]
