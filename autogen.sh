#!/bin/sh
# Regenerate the build system from configure.ac and the Makefile.am files.
exec autoreconf -fi "$@"
