//! `vary` keys: paths into a scenario as written, e.g.
//! `jobs[example].groups[cache].count` or `nodes[client-{i}].count`. List
//! items are picked by their `id` or `name` (templates included, as written),
//! map entries (a group's `volumes`) by key, and any list item by index.

use serde_json::Value;

/// One step of a path: a field, optionally followed by a `[selector]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub field: String,
    pub selector: Option<String>,
}

/// Parses `a[b].c[d[e]]` into segments; brackets may nest (volume ids such
/// as `unique[{i}]` contain brackets themselves).
pub fn parse(path: &str) -> Result<Vec<Segment>, String> {
    let mut segments = Vec::new();
    let mut chars = path.chars().peekable();
    loop {
        let mut field = String::new();
        while let Some(&c) = chars.peek() {
            if c == '.' || c == '[' {
                break;
            }
            if c == ']' {
                return Err(format!("unbalanced ']' in \"{path}\""));
            }
            field.push(c);
            chars.next();
        }
        if field.trim().is_empty() {
            return Err(format!("empty field name in \"{path}\""));
        }
        let mut selector = None;
        if chars.peek() == Some(&'[') {
            chars.next();
            let mut depth = 1;
            let mut inner = String::new();
            for c in chars.by_ref() {
                match c {
                    '[' => depth += 1,
                    ']' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                inner.push(c);
            }
            if depth != 0 {
                return Err(format!("unclosed '[' in \"{path}\""));
            }
            let inner = inner.trim().trim_matches('"').to_string();
            if inner.is_empty() {
                return Err(format!("empty [] in \"{path}\""));
            }
            selector = Some(inner);
        }
        segments.push(Segment {
            field: field.trim().to_string(),
            selector,
        });
        match chars.next() {
            None => return Ok(segments),
            Some('.') => continue,
            Some(c) => {
                return Err(format!(
                    "unexpected '{c}' in \"{path}\" (expected '.' between fields)"
                ));
            }
        }
    }
}

/// Sets the value at `path` in a scenario tree. Intermediate plain fields
/// are created when missing (`cluster.scheduler_workers` on a scenario
/// without `cluster:`); selected items must exist.
pub fn set(root: &mut Value, path: &[Segment], value: Value) -> Result<(), String> {
    let mut current = root;
    let mut walked = String::new();
    for (position, segment) in path.iter().enumerate() {
        let last = position + 1 == path.len();
        let Value::Object(map) = current else {
            return Err(format!("{} is not a mapping", describe(&walked)));
        };
        if last && segment.selector.is_none() {
            map.insert(segment.field.clone(), value);
            return Ok(());
        }
        let here = if walked.is_empty() {
            segment.field.clone()
        } else {
            format!("{walked}.{}", segment.field)
        };
        current = match &segment.selector {
            None => map
                .entry(segment.field.clone())
                .or_insert_with(|| Value::Object(Default::default())),
            Some(selector) => {
                let Some(container) = map.get_mut(&segment.field) else {
                    return Err(format!("the scenario has no {here}"));
                };
                select(container, selector, &here)?
            }
        };
        walked = match &segment.selector {
            Some(selector) => format!("{here}[{selector}]"),
            None => here,
        };
        if last {
            *current = value;
            return Ok(());
        }
    }
    Err("empty path".to_string())
}

fn describe(walked: &str) -> String {
    if walked.is_empty() {
        "the scenario".to_string()
    } else {
        walked.to_string()
    }
}

/// The item of a list with this `id` or `name` (or index), or a map's entry.
fn select<'a>(
    container: &'a mut Value,
    selector: &str,
    here: &str,
) -> Result<&'a mut Value, String> {
    match container {
        Value::Array(items) => {
            let named = |item: &Value, key: &str| {
                item.get(key)
                    .and_then(scalar_text)
                    .is_some_and(|t| t == selector)
            };
            let found = items
                .iter()
                .position(|item| named(item, "id") || named(item, "name"))
                .or_else(|| selector.parse::<usize>().ok().filter(|&i| i < items.len()));
            match found {
                Some(index) => Ok(&mut items[index]),
                None => {
                    let names: Vec<String> = items
                        .iter()
                        .enumerate()
                        .map(|(i, item)| {
                            item.get("id")
                                .or_else(|| item.get("name"))
                                .and_then(scalar_text)
                                .unwrap_or_else(|| i.to_string())
                        })
                        .collect();
                    Err(format!(
                        "{here} has no item \"{selector}\" (items: {})",
                        names.join(", ")
                    ))
                }
            }
        }
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            map.get_mut(selector).ok_or_else(|| {
                format!(
                    "{here} has no entry \"{selector}\" (entries: {})",
                    keys.join(", ")
                )
            })
        }
        _ => Err(format!(
            "{here} is neither a list nor a mapping, so [{selector}] selects nothing"
        )),
    }
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A vary value as it appears in output columns: strings bare, the rest as YAML writes them.
pub fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_nested_brackets_and_templates() {
        let path = parse("volumes[unique[{i}]].access_mode").unwrap();
        assert_eq!(
            path[0],
            Segment {
                field: "volumes".into(),
                selector: Some("unique[{i}]".into())
            }
        );
        assert_eq!(
            path[1],
            Segment {
                field: "access_mode".into(),
                selector: None
            }
        );
        assert_eq!(parse("jobs[example].groups[cache].count").unwrap().len(), 3);
        assert!(parse("jobs[example").is_err());
        assert!(parse("jobs]x").is_err());
        assert!(parse("jobs..count").is_err());
        assert!(parse("jobs[]").is_err());
    }

    #[test]
    fn sets_by_id_name_key_and_creates_plain_fields() {
        let mut tree = json!({
            "nodes": [{"id": "client-{i}", "count": 3}],
            "jobs": [{"id": "example", "groups": [{"name": "cache", "count": 2,
                      "volumes": {"volume0": {"source": "v"}}}]}]
        });
        set(
            &mut tree,
            &parse("nodes[client-{i}].count").unwrap(),
            json!(8),
        )
        .unwrap();
        set(
            &mut tree,
            &parse("jobs[example].groups[cache].count").unwrap(),
            json!(4),
        )
        .unwrap();
        set(
            &mut tree,
            &parse("jobs[example].groups[cache].volumes[volume0].read_only").unwrap(),
            json!(true),
        )
        .unwrap();
        set(
            &mut tree,
            &parse("cluster.scheduler_workers").unwrap(),
            json!(2),
        )
        .unwrap();
        assert_eq!(tree["nodes"][0]["count"], 8);
        assert_eq!(tree["jobs"][0]["groups"][0]["count"], 4);
        assert_eq!(
            tree["jobs"][0]["groups"][0]["volumes"]["volume0"]["read_only"],
            true
        );
        assert_eq!(tree["cluster"]["scheduler_workers"], 2);
    }

    #[test]
    fn missing_items_say_what_exists() {
        let mut tree = json!({"jobs": [{"id": "example", "groups": []}]});
        let err = set(
            &mut tree,
            &parse("jobs[exmaple].groups[cache].count").unwrap(),
            json!(1),
        )
        .unwrap_err();
        assert_eq!(err, "jobs has no item \"exmaple\" (items: example)");
        let err = set(
            &mut tree,
            &parse("plugins[p].enforces_access_mode").unwrap(),
            json!(true),
        )
        .unwrap_err();
        assert_eq!(err, "the scenario has no plugins");
    }
}
