//! Templates: an entry with `count` (nodes, volumes) or `replicas` (jobs) is
//! stamped out that many times, with `{i}` replaced in every string of it.
//!
//! What stamping costs is computed *before* stamping ([`TemplateBudget`]):
//! a one-line `count: 1000000000`, or a 100,000-character id with a count of
//! 20,000, is refused by arithmetic instead of by running out of memory.

use std::collections::BTreeMap;

use serde_saphyr::Spanned;

use super::limits;
use super::raw::*;

pub const INDEX_PLACEHOLDER: &str = "{i}";

/// Where the first `{i}` at or after byte `from` of `text` starts.
fn find_placeholder(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = from;
    while let Some(offset) = bytes[at..].iter().position(|&b| b == b'{') {
        let start = at + offset;
        if bytes[start..].starts_with(INDEX_PLACEHOLDER.as_bytes()) {
            return Some(start);
        }
        at = start + 1;
    }
    None
}

/// Replaces `{i}` in every string a value holds, and lists those strings.
pub trait Stamp {
    fn stamp(&mut self, index: &str);
    /// Calls `visit` with every string the value holds (keys included).
    fn strings(&self, visit: &mut dyn FnMut(&str));
}

impl Stamp for String {
    /// What `replace(INDEX_PLACEHOLDER, index)` gives, found by a byte scan
    /// for `{`: a 40,000-node template stamps 40,000 ids, and the general
    /// substring search cost more than the rest of making each copy.
    fn stamp(&mut self, index: &str) {
        let Some(first) = find_placeholder(self, 0) else {
            return;
        };
        let mut stamped = String::with_capacity(self.len() + index.len());
        let mut copied = 0;
        let mut next = Some(first);
        while let Some(at) = next {
            stamped.push_str(&self[copied..at]);
            stamped.push_str(index);
            copied = at + INDEX_PLACEHOLDER.len();
            next = find_placeholder(self, copied);
        }
        stamped.push_str(&self[copied..]);
        *self = stamped;
    }

    fn strings(&self, visit: &mut dyn FnMut(&str)) {
        visit(self);
    }
}

impl<T: Stamp> Stamp for Option<T> {
    fn stamp(&mut self, index: &str) {
        if let Some(value) = self {
            value.stamp(index);
        }
    }

    fn strings(&self, visit: &mut dyn FnMut(&str)) {
        if let Some(value) = self {
            value.strings(visit);
        }
    }
}

impl<T: Stamp> Stamp for Vec<T> {
    fn stamp(&mut self, index: &str) {
        for item in self {
            item.stamp(index);
        }
    }

    fn strings(&self, visit: &mut dyn FnMut(&str)) {
        for item in self {
            item.strings(visit);
        }
    }
}

impl<T: Stamp> Stamp for Spanned<T> {
    fn stamp(&mut self, index: &str) {
        self.value.stamp(index);
    }

    fn strings(&self, visit: &mut dyn FnMut(&str)) {
        self.value.strings(visit);
    }
}

/// Keys are stamped too: `attributes: {"slot-{i}": "x"}` is a fair template.
impl<V: Stamp> Stamp for BTreeMap<String, V> {
    fn stamp(&mut self, index: &str) {
        let entries = std::mem::take(self);
        for (mut key, mut value) in entries {
            key.stamp(index);
            value.stamp(index);
            self.insert(key, value);
        }
    }

    fn strings(&self, visit: &mut dyn FnMut(&str)) {
        for (key, value) in self {
            visit(key);
            value.strings(visit);
        }
    }
}

macro_rules! stamp_fields {
    ($type:ty { $($field:ident),* }) => {
        impl Stamp for $type {
            fn stamp(&mut self, index: &str) {
                $( self.$field.stamp(index); )*
            }

            fn strings(&self, visit: &mut dyn FnMut(&str)) {
                $( self.$field.strings(visit); )*
            }
        }
    };
}

stamp_fields!(RawNode {
    id,
    datacenter,
    node_class,
    attributes,
    drivers,
    topology,
    csi_plugins,
    node_pool,
    reserved_ports
});
stamp_fields!(RawNodePlugin { id });
stamp_fields!(RawVolume {
    id,
    plugin_id,
    topologies
});
stamp_fields!(RawJob {
    id,
    datacenters,
    constraints,
    groups,
    spread,
    affinity
});
stamp_fields!(RawSpread { attribute, targets });
stamp_fields!(RawSpreadTarget { value });
stamp_fields!(RawAffinity {
    attribute,
    operator,
    value
});
stamp_fields!(RawConstraint {
    attribute,
    operator,
    value
});
stamp_fields!(RawGroup {
    name,
    volumes,
    constraints,
    tasks,
    spread,
    affinity,
    network
});
stamp_fields!(RawNetwork { ports });
stamp_fields!(RawPort { label });
stamp_fields!(RawVolumeRequest { source });
stamp_fields!(RawTask {
    name,
    driver,
    volume_mounts,
    csi_plugin
});
stamp_fields!(RawCsiPlugin { id });
stamp_fields!(RawVolumeMount {
    volume,
    destination
});

/// Bytes one stamped copy costs besides its strings (the entry's fields and
/// what it resolves to), and each string's own overhead. Deliberately
/// generous: the budget must hold for any entry shape.
const ENTRY_OVERHEAD_BYTES: u64 = 512;
const STRING_OVERHEAD_BYTES: u64 = 32;

/// The bytes every template of one scenario may expand to, summed and
/// checked before each entry is stamped (MAX_TEMPLATE_BYTES).
#[derive(Debug, Default)]
pub struct TemplateBudget {
    used: u64,
}

impl TemplateBudget {
    /// Charges `count` copies of `entry`; the error says what they would
    /// cost and what to change.
    pub fn charge<T: Stamp>(&mut self, entry: &T, count: u32) -> Result<(), String> {
        let (mut bytes, mut strings, mut placeholders) = (0u64, 0u64, 0u64);
        entry.strings(&mut |text| {
            bytes += text.len() as u64;
            strings += 1;
            placeholders += text.matches(INDEX_PLACEHOLDER).count() as u64;
        });
        // `{i}` becomes at most as many digits as the largest index has.
        let digits = count.saturating_sub(1).to_string().len() as u64;
        let per_copy = ENTRY_OVERHEAD_BYTES
            + strings * STRING_OVERHEAD_BYTES
            + bytes
            + placeholders * digits.saturating_sub(INDEX_PLACEHOLDER.len() as u64);
        let total = per_copy.saturating_mul(u64::from(count));
        let after = self.used.saturating_add(total);
        if after > limits::MAX_TEMPLATE_BYTES {
            return Err(format!(
                "{count} copies of {bytes} bytes of text each would take about {} MiB, and every template of a scenario together may take {} MiB (MAX_TEMPLATE_BYTES): lower the count or shorten the entry's strings",
                after.div_ceil(1024 * 1024),
                limits::MAX_TEMPLATE_BYTES / (1024 * 1024)
            ));
        }
        self.used = after;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamping_a_string_is_replacing_the_placeholder() {
        let texts = [
            "",
            "{i}",
            "node-{i}",
            "{i}-{i}",
            "{{i}}",
            "{i",
            "i}",
            "{ i}",
            "{{i}",
            "x{i}y{i}z",
            "é{i}ü",
            "{i}{i}{i}",
            "no placeholder",
            "{}{i}{",
        ];
        for text in texts {
            for index in ["0", "17", "{i}", ""] {
                let mut stamped = text.to_string();
                stamped.stamp(index);
                assert_eq!(
                    stamped,
                    text.replace(INDEX_PLACEHOLDER, index),
                    "{text:?} {index:?}"
                );
            }
        }
    }

    #[test]
    fn stamps_strings_keys_and_nested_entries() {
        let mut node = RawNode {
            id: "client-{i}".into(),
            count: Some(RawCount(2)),
            datacenter: Some("dc{i}".into()),
            node_class: None,
            attributes: Some(BTreeMap::from([(
                "slot-{i}".to_string(),
                "v{i}".to_string(),
            )])),
            cpu: None,
            memory: None,
            disk: None,
            drivers: None,
            topology: None,
            csi_plugins: Some(vec![RawNodePlugin {
                id: "plugin-{i}".into(),
                healthy: None,
                max_volumes: None,
            }]),
            node_pool: None,
            reserved_ports: None,
            host_volumes: None,
        };
        node.stamp("3");
        assert_eq!(node.id, "client-3");
        assert_eq!(node.datacenter.as_deref(), Some("dc3"));
        assert_eq!(
            node.attributes.unwrap().get("slot-3").map(String::as_str),
            Some("v3")
        );
        assert_eq!(node.csi_plugins.unwrap()[0].id, "plugin-3");
    }

    #[test]
    fn the_budget_refuses_huge_expansions_before_they_happen() {
        let mut node = RawNode {
            id: "n-{i}".into(),
            count: None,
            datacenter: None,
            node_class: None,
            attributes: None,
            cpu: None,
            memory: None,
            disk: None,
            drivers: None,
            topology: None,
            csi_plugins: None,
            node_pool: None,
            reserved_ports: None,
            host_volumes: None,
        };
        let mut budget = TemplateBudget::default();
        budget.charge(&node, 5000).unwrap();
        assert!(budget.charge(&node, 1_000_000_000).is_err());
        node.id = format!("{}{{i}}", "x".repeat(100_000));
        let err = TemplateBudget::default().charge(&node, 20_000).unwrap_err();
        assert!(
            err.starts_with("20000 copies of 100003 bytes of text each would take about 1918 MiB"),
            "{err}"
        );
    }
}
