//! A standard module used without its import (`csv.reader` with no
//! `import csv`): the import is added at the top and the program run
//! again, a few times at most. Lines before the error did run, so only
//! where they cannot have changed the workspace.

use async_trait::async_trait;

use super::{Proposal, Repair, RepairContext};

/// Most missing imports added to one program before its error is shown.
const MAX_ADDED_IMPORTS: usize = 3;

/// The repair.
pub struct Imports;

#[async_trait]
impl Repair for Imports {
    fn times(&self) -> usize {
        MAX_ADDED_IMPORTS
    }

    fn read_only_workspace(&self) -> bool {
        true
    }

    async fn propose(&self, cx: &RepairContext<'_>) -> Option<Proposal> {
        if cx.language != "python" {
            return None;
        }
        let import = undefined_name(&cx.output?.stderr).and_then(missing_import)?;
        Some(Proposal {
            code: format!("{import}\n{}", cx.code),
            detail: import.to_string(),
        })
    }

    fn note(&self, added: &[String]) -> String {
        let one = added.len() == 1;
        format!(
            "`{}` {} missing and {} added at the top",
            added.join("` and `"),
            if one { "was" } else { "were" },
            if one { "was" } else { "were" },
        )
    }
}

/// The import statement that defines `name`, when it is a standard-library
/// module or one of the few names programs take from one (`Counter`,
/// `Path`). Anything else undefined is the program's own mistake, and the
/// model is told so instead.
pub fn missing_import(name: &str) -> Option<&'static str> {
    const IMPORTS: &[&str] = &[
        "import csv",
        "import json",
        "import os",
        "import re",
        "import math",
        "import sys",
        "import statistics",
        "import collections",
        "import datetime",
        "import itertools",
        "import functools",
        "import glob",
        "import pathlib",
        "import string",
        "import random",
        "import time",
        "import decimal",
        "import fractions",
        "import textwrap",
        "import operator",
        "import heapq",
        "import bisect",
        "import hashlib",
        "import base64",
        "import shutil",
        "import io",
        "import tomllib",
        "import configparser",
        "import sqlite3",
        "import struct",
        "import zipfile",
        "import gzip",
        "import copy",
        "import pprint",
        "import unicodedata",
        "from collections import Counter",
        "from collections import defaultdict",
        "from collections import OrderedDict",
        "from collections import namedtuple",
        "from collections import deque",
        "from pathlib import Path",
        "from decimal import Decimal",
        "from fractions import Fraction",
        "from functools import reduce",
    ];
    IMPORTS
        .iter()
        .find(|import| import.rsplit(' ').next() == Some(name))
        .copied()
}

/// The name in Python's last `NameError: name 'X' is not defined`.
pub fn undefined_name(stderr: &str) -> Option<&str> {
    let line = stderr
        .lines()
        .rev()
        .find(|line| line.starts_with("NameError: name '"))?;
    let rest = line.strip_prefix("NameError: name '")?;
    let name = &rest[..rest.find('\'')?];
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_undefined_name_is_read_from_the_last_name_error() {
        let stderr = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nNameError: name 'data' is not defined\n";
        assert_eq!(undefined_name(stderr), Some("data"));
        assert_eq!(undefined_name("SyntaxError: invalid syntax"), None);
        assert_eq!(undefined_name("NameError: name '"), None);
    }

    #[test]
    fn standard_modules_and_their_common_names_have_imports() {
        assert_eq!(missing_import("csv"), Some("import csv"));
        assert_eq!(missing_import("os"), Some("import os"));
        assert_eq!(
            missing_import("Counter"),
            Some("from collections import Counter")
        );
        assert_eq!(missing_import("Path"), Some("from pathlib import Path"));
        // The program's own names are not guessed.
        assert_eq!(missing_import("data"), None);
        assert_eq!(missing_import("rows"), None);
        assert_eq!(missing_import("import"), None);
    }

    #[test]
    fn the_note_lists_what_was_added() {
        assert_eq!(
            Imports.note(&["import csv".into()]),
            "`import csv` was missing and was added at the top"
        );
        assert_eq!(
            Imports.note(&["import csv".into(), "import re".into()]),
            "`import csv` and `import re` were missing and were added at the top"
        );
    }
}
