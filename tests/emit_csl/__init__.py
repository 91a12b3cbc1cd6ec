"""Tests of the CSL back end (a package: its helpers are imported relatively, e.g. ``from .programs import``)."""
