//! Network ports (Nomad's group `network` block and the client's
//! `reserved.reserved_ports`): what a group asks for, what a node keeps
//! for itself, and the port arithmetic the scheduler and the plan applier
//! share (`nomad/structs/network.go`: `NetworkIndex`, `AssignPorts`,
//! `getDynamicPortsPrecise`; `nomad/structs/funcs.go:ParsePortRanges`).
//!
//! Simplifications (ARCHITECTURE, fidelity table): one host network per
//! node (no `host_network`, no multiple addresses), network modes `host`
//! and `bridge` alike, and a dynamic port is the lowest free port of the
//! node's range (Nomad draws one at random), so only how many dynamic
//! ports are free matters.

/// Nomad's default dynamic port range (`structs.DefaultMinDynamicPort`,
/// `DefaultMaxDynamicPort`; both ends included, as
/// `Bitmap.IndexesInRange` counts them).
pub const MIN_DYNAMIC_PORT: u16 = 20000;
pub const MAX_DYNAMIC_PORT: u16 = 32000;

/// One port of a group's `network` block: `static` (a reserved port in
/// Nomad's words) or dynamic (`None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortAsk {
    pub label: String,
    pub value: Option<u16>,
}

/// The static ports of a group's ask.
pub fn static_ports(ports: &[PortAsk]) -> impl Iterator<Item = (&str, u16)> {
    ports
        .iter()
        .filter_map(|p| p.value.map(|v| (p.label.as_str(), v)))
}

/// How many dynamic ports a group asks for.
pub fn dynamic_count(ports: &[PortAsk]) -> u32 {
    ports.iter().filter(|p| p.value.is_none()).count() as u32
}

/// A node's reserved ports as sorted, disjoint, non-adjacent inclusive
/// ranges (so two spellings of one set compare equal).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortRanges(pub Vec<(u16, u16)>);

impl PortRanges {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `port` is reserved.
    pub fn contains(&self, port: u16) -> bool {
        let at = self.0.partition_point(|&(_, hi)| hi < port);
        self.0.get(at).is_some_and(|&(lo, _)| lo <= port)
    }

    /// Reserved ports within `lo..=hi`.
    pub fn count_within(&self, lo: u16, hi: u16) -> u32 {
        self.0
            .iter()
            .filter(|&&(a, b)| a <= hi && b >= lo)
            .map(|&(a, b)| u32::from(b.min(hi)) - u32::from(a.max(lo)) + 1)
            .sum()
    }

    /// Nomad's spelling: "22,8500-8600".
    pub fn spelled(&self) -> String {
        self.0
            .iter()
            .map(|&(lo, hi)| {
                if lo == hi {
                    lo.to_string()
                } else {
                    format!("{lo}-{hi}")
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// From ranges in any order: sorted and merged.
    fn normalised(mut ranges: Vec<(u16, u16)>) -> PortRanges {
        ranges.sort_unstable();
        let mut merged: Vec<(u16, u16)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            match merged.last_mut() {
                Some(last) if u32::from(lo) <= u32::from(last.1) + 1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        PortRanges(merged)
    }
}

/// Nomad's `structs.ParsePortRanges` (the client's
/// `reserved.reserved_ports`), with its messages and its limit of
/// 65536 reserved ports; `max_parts` bounds the comma-separated parts
/// (plansim's MAX_RESERVED_PORT_RANGES) before any is read. Nomad accepts
/// 65536 itself, which its 65536-bit port bitmap cannot hold: plansim
/// refuses it with the same message as a larger port.
pub fn parse_port_ranges(spec: &str, max_parts: usize) -> Result<PortRanges, String> {
    if spec.is_empty() {
        return Ok(PortRanges::default());
    }
    let parts = spec.split(',').count();
    if parts > max_parts {
        return Err(format!(
            "{parts} port ranges: at most {max_parts} (MAX_RESERVED_PORT_RANGES)"
        ));
    }
    const LIMIT: u64 = 65536;
    let number = |text: &str| -> Result<u64, String> {
        // Go's strconv.ParseUint(s, 10, 0): digits only.
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "strconv.ParseUint: parsing {text:?}: invalid syntax"
            ));
        }
        text.parse::<u64>()
            .map_err(|_| format!("strconv.ParseUint: parsing {text:?}: value out of range"))
    };
    let too_big = |port: u64| format!("port must be < {LIMIT} but found {port}");
    let mut count: u64 = 0;
    let mut ranges = Vec::with_capacity(parts);
    for part in spec.split(',') {
        let part = part.trim_matches(|c: char| c.is_whitespace());
        let pieces: Vec<&str> = part.split('-').collect();
        match pieces.as_slice() {
            [single] => {
                if single.is_empty() {
                    return Err("can't specify empty port".to_string());
                }
                let port = number(single)?;
                if port == 0 {
                    return Err("port must be > 0".to_string());
                }
                if port >= LIMIT {
                    return Err(too_big(port));
                }
                count += 1;
                ranges.push((port as u16, port as u16));
            }
            [start, end] => {
                let (start, end) = (number(start)?, number(end)?);
                if end < start {
                    return Err(format!(
                        "invalid range: ending value ({end}) less than starting ({start}) value"
                    ));
                }
                if start == 0 {
                    return Err("port must be > 0".to_string());
                }
                if end >= LIMIT {
                    return Err(too_big(end));
                }
                count += end - start;
                ranges.push((start as u16, end as u16));
            }
            _ => {
                return Err(
                    "can only parse single port numbers or port ranges (ex. 80,100-120,150)"
                        .to_string(),
                );
            }
        }
        if count > LIMIT {
            return Err(format!("maximum of {LIMIT} ports can be reserved"));
        }
    }
    Ok(PortRanges::normalised(ranges))
}

/// The ports in use on one node, for `NetworkIndex`'s questions: the
/// node's reserved ranges, and a sorted list of the ports its
/// allocations hold (a port twice when two collide).
pub struct PortsInUse<'a> {
    pub reserved: &'a PortRanges,
    pub held: &'a [u16],
}

impl PortsInUse<'_> {
    /// Whether `port` is reserved or held.
    pub fn uses(&self, port: u16) -> bool {
        self.reserved.contains(port) || self.held.binary_search(&port).is_ok()
    }

    /// Free ports of the dynamic range, less `taken_too` (ports some
    /// other ask of the same plan takes: each counted once, if free) and
    /// `dynamic_too` dynamic ports taken by the plan without a number yet.
    pub fn free_dynamic(&self, taken_too: &[u16], dynamic_too: u32) -> u32 {
        let range = u32::from(MAX_DYNAMIC_PORT - MIN_DYNAMIC_PORT) + 1;
        let reserved = self
            .reserved
            .count_within(MIN_DYNAMIC_PORT, MAX_DYNAMIC_PORT);
        let in_range = |p: &u16| (MIN_DYNAMIC_PORT..=MAX_DYNAMIC_PORT).contains(p);
        let mut held: Vec<u16> = self
            .held
            .iter()
            .chain(taken_too)
            .copied()
            .filter(|p| in_range(p) && !self.reserved.contains(*p))
            .collect();
        held.sort_unstable();
        held.dedup();
        range.saturating_sub(reserved + held.len() as u32 + dynamic_too)
    }

    /// The lowest `count` free ports of the dynamic range not in `taken_too`
    /// (`getDynamicPortsPrecise`, choosing the lowest instead of at
    /// random), or `None` if fewer are free.
    pub fn lowest_dynamic(&self, taken_too: &[u16], count: u32) -> Option<Vec<u16>> {
        let mut chosen = Vec::with_capacity(count as usize);
        let mut port = MIN_DYNAMIC_PORT;
        while chosen.len() < count as usize {
            if !self.uses(port) && !taken_too.contains(&port) {
                chosen.push(port);
            }
            if port == MAX_DYNAMIC_PORT {
                break;
            }
            port += 1;
        }
        (chosen.len() == count as usize).then_some(chosen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_nomad_does() {
        let r = parse_port_ranges("22, 8500-8600,80,8601", 10).unwrap();
        assert_eq!(r.0, vec![(22, 22), (80, 80), (8500, 8601)]);
        assert_eq!(r.spelled(), "22,80,8500-8601");
        assert!(r.contains(8550) && r.contains(22) && !r.contains(23));
        assert_eq!(r.count_within(8590, 9000), 12);
        assert_eq!(parse_port_ranges("", 1).unwrap(), PortRanges::default());
        assert_eq!(
            parse_port_ranges("0", 4).unwrap_err(),
            "port must be > 0".to_string()
        );
        assert!(
            parse_port_ranges("65536", 4)
                .unwrap_err()
                .contains("< 65536")
        );
        assert!(
            parse_port_ranges("9-3", 4)
                .unwrap_err()
                .contains("invalid range")
        );
        assert!(
            parse_port_ranges("1-2-3", 4)
                .unwrap_err()
                .contains("can only")
        );
        assert!(
            parse_port_ranges("a", 4)
                .unwrap_err()
                .contains("invalid syntax")
        );
        assert!(
            parse_port_ranges("80,", 4)
                .unwrap_err()
                .contains("empty port")
        );
        assert!(
            parse_port_ranges("1,2,3", 2)
                .unwrap_err()
                .contains("MAX_RESERVED")
        );
        assert_eq!(parse_port_ranges("1-65535", 1).unwrap().0, vec![(1, 65535)]);
    }

    #[test]
    fn dynamic_ports_are_the_lowest_free() {
        let reserved = parse_port_ranges("20000-20002", 4).unwrap();
        let held = [80, 20004];
        let use_ = PortsInUse {
            reserved: &reserved,
            held: &held,
        };
        assert_eq!(use_.lowest_dynamic(&[20003], 2), Some(vec![20005, 20006]));
        assert_eq!(use_.free_dynamic(&[20003, 80], 1), 12001 - 3 - 2 - 1);
        let all = parse_port_ranges("20000-32000", 4).unwrap();
        let full = PortsInUse {
            reserved: &all,
            held: &[],
        };
        assert_eq!(full.free_dynamic(&[], 0), 0);
        assert_eq!(full.lowest_dynamic(&[], 1), None);
        assert_eq!(full.lowest_dynamic(&[], 0), Some(vec![]));
    }
}
