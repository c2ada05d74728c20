//! What every section shares: stamping a template entry out `count` times,
//! refusing a repeated id, and numbering driver names.

use serde_saphyr::{Location, Spanned};

use crate::model::scenario::DriverSet;
use crate::scenario::error::{Fail, fail};
use crate::scenario::raw::RawCount;
use crate::scenario::template::{INDEX_PLACEHOLDER, Stamp, TemplateBudget};

/// Driver names seen so far; their positions are `DriverSet` bits.
#[derive(Default)]
pub(super) struct DriverNames(pub(super) Vec<String>);

impl DriverNames {
    pub(super) fn set<'a>(
        &mut self,
        names: impl IntoIterator<Item = &'a str>,
        at: Location,
        path: &dyn Fn() -> String,
    ) -> Result<DriverSet, Fail> {
        let mut set = DriverSet::default();
        for name in names {
            let index = match self.0.iter().position(|known| known == name) {
                Some(index) => index,
                None if self.0.len() < DriverSet::CAPACITY => {
                    self.0.push(name.to_string());
                    self.0.len() - 1
                }
                None => {
                    return fail(
                        at,
                        format!(
                            "{}: more than {} distinct driver names in one scenario",
                            path(),
                            DriverSet::CAPACITY
                        ),
                    );
                }
            };
            set = set.with(index);
        }
        Ok(set)
    }
}

/// Stamps out a template entry `count` times, or returns it once. Before
/// anything is stamped, the copies are checked against the entry kind's
/// limit (`have` entries so far) and charged to the template byte budget;
/// copies are then made one at a time, as the caller consumes them.
#[allow(clippy::too_many_arguments)]
pub(super) fn expand<'e, T: Clone + Stamp>(
    entry: &'e Spanned<T>,
    id: &str,
    count: Option<RawCount>,
    what: &str,
    count_field: &str,
    (have, limit, limit_name): (usize, usize, &str),
    budget: &mut TemplateBudget,
) -> Result<impl Iterator<Item = T> + 'e, Fail> {
    let name = crate::names::shown(id);
    // Only a template (an entry with a count) is stamped: without one,
    // `{i}` is text like any other, so a Nomad node or job whose name holds
    // it (an import writes names as Nomad has them) keeps its name.
    let template = count.is_some();
    let count = count.map_or(1, |c| c.0);
    if count == 0 {
        return fail(
            entry.referenced,
            format!("{what}[{name}].{count_field}: must be at least 1"),
        );
    }
    if count > 1 && !id.contains(INDEX_PLACEHOLDER) {
        return fail(
            entry.referenced,
            format!(
                "{what}[{name}].{count_field}: {count} copies need distinct ids: put {{i}} in the id (e.g. \"{name}-{{i}}\")"
            ),
        );
    }
    if have.saturating_add(count as usize) > limit {
        return fail(
            entry.referenced,
            format!(
                "{what}[{name}].{count_field}: {count} copies would make {} {what}, more than the limit of {limit} ({limit_name})",
                have.saturating_add(count as usize)
            ),
        );
    }
    // Every string of the entry may reach a terminal, Markdown or CSV.
    let mut control = None;
    entry.value.strings(&mut |text| {
        if control.is_none() {
            control = crate::names::check_text(text, false)
                .err()
                .map(|problem| format!("\"{}\" {problem}", crate::names::shown(text)));
        }
    });
    if let Some(problem) = control {
        return fail(entry.referenced, format!("{what}[{name}]: {problem}"));
    }
    budget.charge(&entry.value, count).map_err(|message| {
        (
            Some(entry.referenced),
            format!("{what}[{name}].{count_field}: {message}"),
        )
    })?;
    Ok((0..count).map(move |i| {
        let mut copy = entry.value.clone();
        if template {
            copy.stamp(&i.to_string());
        }
        copy
    }))
}

/// Remembers ids seen so far and refuses the second of a pair.
pub(super) struct UniqueIds<'a> {
    what: &'a str,
    /// Membership only, never iterated, so its order cannot reach any
    /// output: a hash set, because a 40,000-node snapshot inserts 40,000
    /// ids, which an ordered set compares string by string (a fifth of the
    /// whole load). Its seeded SipHash keeps hostile ids from colliding on
    /// purpose.
    #[allow(clippy::disallowed_types)]
    seen: std::collections::HashSet<String>,
}

impl<'a> UniqueIds<'a> {
    pub(super) fn new(what: &'a str) -> Self {
        UniqueIds {
            what,
            seen: Default::default(),
        }
    }

    /// Room for `more` ids, counted against their limit by the caller.
    pub(super) fn reserve(&mut self, more: usize) {
        self.seen.reserve(more);
    }

    pub(super) fn insert(&mut self, id: &str, at: Location) -> Result<(), Fail> {
        if id.trim().is_empty() {
            return fail(at, format!("{}: an id must not be empty", self.what));
        }
        // The id as shown in a message is made only for a message: a
        // 40,000-node scenario checks 40,000 ids.
        let shown = || crate::names::shown(id);
        if let Err(problem) = crate::names::check(id) {
            return fail(at, format!("{}[{}]: the id {problem}", self.what, shown()));
        }
        if !self.seen.insert(id.to_string()) {
            let shown = shown();
            return fail(
                at,
                format!("{}[{shown}]: \"{shown}\" is used twice", self.what),
            );
        }
        Ok(())
    }
}

/// A job's or volume's `namespace`: "default" unless given, else a name
/// Nomad accepts (structs.go `Namespace.Validate`: `^[a-zA-Z0-9-]{1,128}$`).
pub(super) fn resolve_namespace(
    namespace: Option<String>,
    at: Location,
    path: &str,
) -> Result<String, Fail> {
    let Some(namespace) = namespace else {
        return Ok(crate::model::scenario::DEFAULT_NAMESPACE.to_string());
    };
    let valid = (1..=128).contains(&namespace.len())
        && namespace
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !valid {
        return fail(
            at,
            format!(
                "{path}.namespace: \"{}\" is not a namespace name: expected 1 to 128 letters, digits and dashes",
                crate::names::shown(&namespace)
            ),
        );
    }
    Ok(namespace)
}
