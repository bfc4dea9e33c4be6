#!/bin/sh
# run by ansible.builtin.script: prints a short, stable report
echo "script for $1"
cd "$2" && ls -1 *.ini *.txt | sort
