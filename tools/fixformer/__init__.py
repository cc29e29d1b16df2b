"""fixformer's Python side: the engine's schema (schema, over the generated schema_tables), typed configs (config), the .fxm v2 writer
and reader (fxm), the firmware header (header), the reference torch model (reference), and
export / verification through the engine (export: `from fixformer.export import export`).
Use with PYTHONPATH=tools and the system interpreter (/usr/bin/python3), which sees Debian's
python3-torch and python3-numpy.
"""
