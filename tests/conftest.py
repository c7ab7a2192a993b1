"""Shared test setup."""

import matplotlib

matplotlib.use("Agg")  # tests never open windows; set here, never in the library
