"""One module per family of TFLite builtin operators; importing the package registers them all.

A module registers each operator's Prepare with :func:`dspsim.tflite.prepare.builtin`; nothing
else lists the operators. A new operator is a new function (or module) here, calling its dspsim
kernel.
"""
import importlib
import pkgutil

for _m in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_m.name}")
