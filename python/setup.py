"""setup.py — builds kiln._kiln (python/src/_kiln.c) against libkiln from the CMake build
folder ($KILN_BUILD_DIR, default ../build) with an rpath to it. Metadata is in pyproject.toml."""
import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.abspath(os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build")))

setup(ext_modules=[Extension(
    "kiln._kiln",
    sources=["src/_kiln.c"],
    include_dirs=[os.path.join(ROOT, "include")],
    library_dirs=[BUILD],
    libraries=["kiln"],
    runtime_library_dirs=[BUILD],
    extra_compile_args=["-std=c11"],
)])
