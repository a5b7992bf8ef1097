"""The compiled kernel: one module per Redis mechanism (see ARCHITECTURE.md).

A package so that installs that are not editable (a wheel, ``pip install .``)
carry it; nothing is imported here, so importing a submodule costs only that
submodule.
"""
