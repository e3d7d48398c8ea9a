//! What a `KeyError` missed: the keys the data the program opened really
//! has, read from the workspace files it names. A small model guesses
//! column and field names (`row['name']` on a file with no header line,
//! `row['price']` where the header says `unit_price` or ` price`) and,
//! told only "see stderr", guesses again.

/// Most keys shown for one file.
const MAX_KEYS: usize = 12;

/// The string key a program looked up and did not find, from its last
/// `KeyError: 'X'` line.
pub fn missing_key(stderr: &str) -> Option<&str> {
    let line = stderr
        .lines()
        .rev()
        .find(|line| line.starts_with("KeyError: "))?;
    let quoted = line.strip_prefix("KeyError: ")?.trim();
    ['\'', '"'].into_iter().find_map(|q| {
        quoted
            .strip_prefix(q)
            .and_then(|rest| rest.strip_suffix(q))
    })
}

/// The string literals in `code`, each once, in order: the names of the
/// files it may open.
pub fn string_literals(code: &str) -> Vec<&str> {
    let mut found: Vec<&str> = Vec::new();
    let mut rest = code;
    while let Some(start) = rest.find(['\'', '"']) {
        let quote = rest[start..].chars().next().unwrap_or('\'');
        let body = &rest[start + 1..];
        let Some(end) = body.find([quote, '\n']) else {
            break;
        };
        let literal = &body[..end];
        if !literal.is_empty() && !found.contains(&literal) {
            found.push(literal);
        }
        rest = &body[(end + 1).min(body.len())..];
    }
    found
}

/// The keys of the records in a file named `name` holding `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    /// The file, as the code named it.
    pub file: String,
    /// How the keys were read, said in the hint.
    pub shape: KeyShape,
    /// The keys, in the file's order.
    pub keys: Vec<String>,
    /// For an object of objects, the keys of its first value.
    pub inner: Vec<String>,
}

/// Where a file's keys come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyShape {
    /// The first line, split as `csv.DictReader` splits it.
    Header {
        /// Whether the file has more than one line.
        more_lines: bool,
    },
    /// A JSON object's keys.
    Object,
    /// The keys of the first object in a JSON list.
    ListOfObjects,
    /// The keys of the first value of a JSON object whose values are objects.
    ObjectOfObjects,
}

/// Reads the record keys of `text`: a JSON object's (or its first
/// record's) keys when it parses as JSON, else its first non-blank line
/// split on the commonest of `,` `;` tab `|` (one key when none).
pub fn record_keys(file: &str, text: &str) -> Option<Keys> {
    let keys = |shape, keys: Vec<String>, inner: Vec<String>| {
        Some(Keys {
            file: file.to_string(),
            shape,
            keys,
            inner,
        })
    };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => {
            let inner = map.values().next().and_then(|v| v.as_object());
            match inner {
                Some(inner) if map.values().all(|v| v.is_object()) => keys(
                    KeyShape::ObjectOfObjects,
                    map.keys().cloned().collect(),
                    inner.keys().cloned().collect(),
                ),
                _ => keys(KeyShape::Object, map.keys().cloned().collect(), Vec::new()),
            }
        }
        Ok(serde_json::Value::Array(items)) => {
            let first = items.iter().find_map(|v| v.as_object())?;
            keys(
                KeyShape::ListOfObjects,
                first.keys().cloned().collect(),
                Vec::new(),
            )
        }
        Ok(_) => None,
        Err(_) => {
            let mut lines = text.lines().filter(|l| !l.trim().is_empty());
            let header = lines.next()?;
            // The commonest delimiter; the first listed on a tie.
            let delimiter = [',', ';', '\t', '|']
                .into_iter()
                .map(|d| (header.matches(d).count(), d))
                .fold(None, |best: Option<(usize, char)>, (n, d)| match best {
                    Some((m, _)) if m >= n => best,
                    _ if n > 0 => Some((n, d)),
                    _ => best,
                })
                .map(|(_, d)| d);
            let split: Vec<String> = match delimiter {
                Some(d) => header.split(d).map(str::to_string).collect(),
                None => vec![header.to_string()],
            };
            keys(
                KeyShape::Header {
                    more_lines: lines.next().is_some(),
                },
                split,
                Vec::new(),
            )
        }
    }
}

/// The hint for a `KeyError` on `missing`, from the keys of the files the
/// program names (the first one read), starting with `; ` (it follows "the
/// code exited with code 1"). None when one of them has the key: the
/// lookup that failed was then on something else.
pub fn keys_hint(missing: &str, files: &[Keys]) -> Option<String> {
    if files
        .iter()
        .any(|k| k.keys.iter().chain(&k.inner).any(|key| key == missing))
    {
        return None;
    }
    let keys = files.first()?;
    let listed = listed(&keys.keys);
    let file = &keys.file;
    let mut hint = match keys.shape {
        KeyShape::Header { more_lines } if keys.keys.len() == 1 && more_lines => format!(
            "; there is no key `{missing}`: `{file}` has no header line of names (its first line is {listed}), so csv.DictReader has no such column; read its lines with open('{file}').read().splitlines()"
        ),
        KeyShape::Header { .. } => format!(
            "; there is no key `{missing}`: the first line of `{file}` names the columns {listed}"
        ),
        KeyShape::Object => format!(
            "; there is no key `{missing}`: `{file}` holds an object with the keys {listed}"
        ),
        KeyShape::ListOfObjects => format!(
            "; there is no key `{missing}`: `{file}` holds a list of objects with the keys {listed}"
        ),
        KeyShape::ObjectOfObjects => format!(
            "; there is no key `{missing}`: `{file}` holds an object with the keys {listed}, each an object with the keys {}",
            self::listed(&keys.inner)
        ),
    };
    let near = keys
        .keys
        .iter()
        .find(|k| k.trim().eq_ignore_ascii_case(missing.trim()) || k.trim() == missing);
    if let Some(near) = near {
        hint.push_str(&format!(
            "; `{near}` is the key it meant, written exactly so{}",
            if near.trim() != near {
                " (the spaces are part of it: csv.DictReader(f, skipinitialspace=True) drops them)"
            } else {
                ""
            }
        ));
    }
    Some(hint)
}

/// `keys` as a list of backticked names, at most [`MAX_KEYS`].
fn listed(keys: &[String]) -> String {
    let mut listed = keys
        .iter()
        .take(MAX_KEYS)
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if keys.len() > MAX_KEYS {
        listed.push_str(&format!(" and {} more", keys.len() - MAX_KEYS));
    }
    listed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_missing_key_and_the_named_files_are_read_from_the_failure() {
        let stderr = "Traceback (most recent call last):\n  File \"<string>\", line 3, in <genexpr>\nKeyError: 'name'\n";
        assert_eq!(missing_key(stderr), Some("name"));
        assert_eq!(missing_key("KeyError: 3"), None);
        assert_eq!(missing_key("boom"), None);
        let code = "import csv\nrows = list(csv.DictReader(open('teams/data.txt')))\nprint(row[\"name\"], '')";
        assert_eq!(string_literals(code), ["teams/data.txt", "name"]);
    }

    #[test]
    fn a_file_without_a_header_line_is_said_to_have_none() {
        let keys = record_keys("teams/data.txt", "Chloe\nElif\nFarah\n").unwrap();
        assert_eq!(keys.keys, ["Chloe"]);
        assert_eq!(
            keys_hint("name", &[keys]).unwrap(),
            "; there is no key `name`: `teams/data.txt` has no header line of names (its first line is `Chloe`), so csv.DictReader has no such column; read its lines with open('teams/data.txt').read().splitlines()"
        );
    }

    #[test]
    fn a_header_gives_its_columns_and_the_key_meant() {
        let tie = record_keys("sales.csv", "region, Price;x\nnorth, 3\n").unwrap();
        assert_eq!(tie.keys, ["region", " Price;x"], "a comma wins a tie");
        let keys = record_keys("sales.csv", "region, price\nnorth, 3\n").unwrap();
        assert_eq!(
            keys_hint("price", &[keys]).unwrap(),
            "; there is no key `price`: the first line of `sales.csv` names the columns `region`, ` price`; \
             ` price` is the key it meant, written exactly so (the spaces are part of it: csv.DictReader(f, skipinitialspace=True) drops them)"
        );
        let semicolons = record_keys("a.csv", "Region;Units\nn;1").unwrap();
        assert!(keys_hint("region", &[semicolons])
            .unwrap()
            .ends_with("; `Region` is the key it meant, written exactly so"));
    }

    #[test]
    fn json_gives_its_objects_keys() {
        let object = record_keys("prices.json", r#"{"A-1": 2.5, "B-2": 4}"#).unwrap();
        assert_eq!(
            keys_hint("price", &[object]).unwrap(),
            "; there is no key `price`: `prices.json` holds an object with the keys `A-1`, `B-2`"
        );
        let list = record_keys("p.json", r#"[{"sku": "A", "qty": 1}, {"sku": "B"}]"#).unwrap();
        assert_eq!(list.shape, KeyShape::ListOfObjects);
        assert_eq!(list.keys, ["sku", "qty"]);
        let nested = record_keys("p.json", r#"{"north": {"units": 3}, "south": {"units": 4}}"#).unwrap();
        assert_eq!(
            keys_hint("west", &[nested]).unwrap(),
            "; there is no key `west`: `p.json` holds an object with the keys `north`, `south`, each an object with the keys `units`"
        );
        assert_eq!(record_keys("n.json", "3"), None);
        // When a named file has the key, the lookup failed on something else.
        let has = record_keys("a.json", r#"{"price": 1}"#).unwrap();
        let lacks = record_keys("b.csv", "sku,qty\n").unwrap();
        assert_eq!(keys_hint("price", &[lacks, has]), None);
    }
}
