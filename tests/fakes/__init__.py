"""Test doubles for hardware this machine lacks, built from recorded machines."""
