//! Templates: an entry with `count` (nodes, volumes) or `replicas` (jobs) is
//! stamped out that many times, with `{i}` replaced in every string of it.

use std::collections::BTreeMap;

use serde_saphyr::Spanned;

use super::raw::*;

pub const INDEX_PLACEHOLDER: &str = "{i}";

/// Replaces `{i}` in every string a value holds.
pub trait Stamp {
    fn stamp(&mut self, index: &str);
}

impl Stamp for String {
    fn stamp(&mut self, index: &str) {
        if self.contains(INDEX_PLACEHOLDER) {
            *self = self.replace(INDEX_PLACEHOLDER, index);
        }
    }
}

impl<T: Stamp> Stamp for Option<T> {
    fn stamp(&mut self, index: &str) {
        if let Some(value) = self {
            value.stamp(index);
        }
    }
}

impl<T: Stamp> Stamp for Vec<T> {
    fn stamp(&mut self, index: &str) {
        for item in self {
            item.stamp(index);
        }
    }
}

impl<T: Stamp> Stamp for Spanned<T> {
    fn stamp(&mut self, index: &str) {
        self.value.stamp(index);
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
}

macro_rules! stamp_fields {
    ($type:ty { $($field:ident),* }) => {
        impl Stamp for $type {
            fn stamp(&mut self, index: &str) {
                $( self.$field.stamp(index); )*
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
    csi_plugins
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
    groups
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
    tasks
});
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

#[cfg(test)]
mod tests {
    use super::*;

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
            drivers: None,
            topology: None,
            csi_plugins: Some(vec![RawNodePlugin {
                id: "plugin-{i}".into(),
                healthy: None,
                max_volumes: None,
            }]),
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
}
