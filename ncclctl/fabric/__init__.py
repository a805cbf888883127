"""Fabric-scale work: synthetic fabrics (and, next, loading, rail detection, cabling checks, host ordering)."""
