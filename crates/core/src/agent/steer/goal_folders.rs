//! **The goal's folders**: a folder of the workspace that the goal names
//! ("Each file in reports/ holds one month's figures", "the files in the
//! teams folder") stands for the files it holds, so they are the goal's
//! inputs as much as a file it names.
//!
//! A goal over a folder names none of its files, so nothing the loop does
//! for a goal's inputs reached them: the input preview showed nothing, and
//! the repeat guidance's list of files no round has read was empty. A small
//! model then read one file of three and computed over it (a net total from
//! one month; EVALS.md, section 38), or searched the folder for a word the
//! goal used, over and over, instead of reading its files. A pure function
//! of the goal and the workspace, like [`super::goal_files`].

use crate::tools::Toolbox;

/// A folder holding more files than this does not stand for its files
/// (a tree to search, not the goal's data).
pub const FOLDER_MAX: usize = 12;

/// Words that say the name next to them is a folder: "the teams folder",
/// "the directory logs", and their German, Spanish, French, Portuguese,
/// Chinese and Japanese counterparts.
const FOLDER_WORDS: [&str; 16] = [
    "folder",
    "directory",
    "dir",
    "ordner",
    "verzeichnis",
    "carpeta",
    "directorio",
    "dossier",
    "répertoire",
    "pasta",
    "diretório",
    "目录",
    "文件夹",
    "資料夾",
    "フォルダ",
    "ディレクトリ",
];

/// Little words that sit next to a folder word without naming a folder
/// ("the folder", "folder and"); a folder so named is not looked for.
const LITTLE_WORDS: [&str; 24] = [
    "the", "a", "an", "and", "or", "of", "in", "into", "to", "from", "this", "that", "each",
    "every", "its", "der", "die", "das", "im", "el", "la", "le", "les", "de",
];

/// The folder names a goal mentions, in order, once each, without a
/// trailing `/`: a path that ends in `/` ("reports/", "data/raw/"), or a
/// name with a folder word before or after it ("the teams folder", "the
/// folder teams", "reports 目录"). URLs, absolute paths and paths that
/// climb out (`..`) are left out. Whether the workspace holds them is
/// for [`files`] to find out.
pub fn named_folders(goal: &str) -> Vec<String> {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_-./".contains(c);
    let mut names: Vec<String> = Vec::new();
    let mut offset = 0;
    while let Some(start) = goal[offset..].find(is_path_char).map(|s| s + offset) {
        let end = goal[start..]
            .find(|c: char| !is_path_char(c))
            .map_or(goal.len(), |e| e + start);
        offset = end;
        let token = goal[start..end].trim_end_matches('.');
        let url = goal[..start].ends_with(':') || goal[end..].starts_with("//");
        if url || token.starts_with('/') || token.contains("..") {
            continue;
        }
        let name = token.trim_end_matches('/');
        if name.is_empty() || name == "." {
            continue;
        }
        let beside_word = !LITTLE_WORDS.contains(&name.to_lowercase().as_str())
            && (folder_word_ends(&goal[..start]) || folder_word_starts(&goal[end..]));
        let folder = token.ends_with('/') || beside_word;
        if folder && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// The files of the workspace folders `goal` names (see
/// [`named_folders`]), each a path relative to the root, in order, once
/// each; a folder holding more than [`FOLDER_MAX`] files gives none.
/// Empty without a workspace.
pub fn files(goal: &str, toolbox: &Toolbox) -> Vec<String> {
    let Some(workspace) = toolbox.workspace() else {
        return Vec::new();
    };
    let mut files: Vec<String> = Vec::new();
    for folder in named_folders(goal) {
        for file in workspace
            .files_under(&folder, FOLDER_MAX)
            .unwrap_or_default()
        {
            if !files.contains(&file) {
                files.push(file);
            }
        }
    }
    files
}

/// Whether `before` (the text before a name) ends with a folder word, as a
/// word of its own: "the folder " before "teams".
fn folder_word_ends(before: &str) -> bool {
    let before = before.trim_end().to_lowercase();
    FOLDER_WORDS.iter().any(|word| {
        before
            .strip_suffix(word)
            .is_some_and(|rest| !word.is_ascii() || !rest.ends_with(|c: char| c.is_alphanumeric()))
    })
}

/// Whether `after` (the text after a name) starts with a folder word, as
/// a word of its own (a plural `s` allowed): " folder" after "teams".
fn folder_word_starts(after: &str) -> bool {
    let after = after.trim_start().to_lowercase();
    FOLDER_WORDS.iter().any(|word| {
        after.strip_prefix(word).is_some_and(|rest| {
            let rest = rest.strip_prefix('s').unwrap_or(rest);
            !word.is_ascii() || !rest.starts_with(|c: char| c.is_alphanumeric())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::steer::goal_files::tests::toolbox;

    #[test]
    fn folders_are_paths_ending_in_a_slash_or_names_beside_a_folder_word() {
        assert_eq!(
            named_folders(
                "Each file in reports/ holds one month's figures. Write the net total to net.txt."
            ),
            ["reports"]
        );
        assert_eq!(
            named_folders(
                "Sum the CSV files in data/raw/, then list the teams folder and the folder logs."
            ),
            ["data/raw", "teams", "logs"]
        );
        assert_eq!(named_folders("把 reports 目录里的数字加起来"), ["reports"]);
        assert_eq!(
            named_folders("Lies alle Dateien im Ordner berichte."),
            ["berichte"]
        );
    }

    #[test]
    fn urls_outside_paths_and_ordinary_words_are_not_folders() {
        assert!(named_folders(
            "Fetch https://example.com/data/ and read /etc/ or ../up/, then write the result to out.txt."
        )
        .is_empty());
        assert!(named_folders("Sort the directions; count the folderless rows.").is_empty());
        assert!(named_folders("Read notes.txt in ./ and answer.").is_empty());
    }

    #[test]
    fn a_named_folder_stands_for_its_files_when_it_holds_a_few() {
        let (_dir, tb) = toolbox(&[
            "reports/2024-02.json",
            "reports/2024-01.json",
            "teams/a.txt",
            "notes.txt",
        ]);
        assert_eq!(
            files(
                "Add up the figures in reports/ and the teams folder; write net.txt.",
                &tb
            ),
            [
                "reports/2024-01.json",
                "reports/2024-02.json",
                "teams/a.txt"
            ]
        );
        assert!(files("Read the folder missing/ and the file notes.txt/", &tb).is_empty());
    }

    #[test]
    fn a_folder_of_many_files_stands_for_none() {
        let many: Vec<String> = (0..=FOLDER_MAX)
            .map(|i| format!("logs/{i:02}.log"))
            .collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let (_dir, tb) = toolbox(&many);
        assert!(files("Count the errors in logs/ and write errors.txt.", &tb).is_empty());
    }
}
