//! A live cluster (`plansim import nomad --address URL`): the export
//! directory's files fetched from Nomad's HTTP API as the importer asks
//! for them, through the endpoints and query options of Nomad v2.0.5's
//! `api` package (`api/nodes.go`, `api/csi.go`, `api/jobs.go`,
//! `api/allocations.go`; `api/api.go` `setQueryOptions`, `parseQueryMeta`):
//! the token as `X-Nomad-Token`, lists paged with `per_page` and
//! `next_token` until no `X-Nomad-NextToken` comes back. Every request has
//! a timeout; every response is at most MAX_FILE_BYTES (but the streamed
//! allocations' pages, which only count against the total) and all of
//! them IMPORT_MAX_TOTAL_BYTES together; at most IMPORT_MAX_ENTRIES
//! requests are made.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::fsio::{ReadError, human_bytes, read_limited, read_text_limited};
use crate::import::nomad::ExportSource;
use crate::names::{one_line, one_line_path};
use crate::scenario::error::{LoadError, file_error};
use crate::scenario::limits::{
    IMPORT_MAX_ENTRIES, IMPORT_MAX_TOTAL_BYTES, IMPORT_PER_PAGE, IMPORT_REQUEST_TIMEOUT_SECS,
    MAX_FILE_BYTES,
};

/// Where and how to reach the cluster, as Nomad's CLI takes it.
#[derive(Clone, Debug)]
pub(crate) struct AddressOptions {
    /// `http://host:4646` or `https://...` (NOMAD_ADDR).
    pub url: String,
    /// A namespace, or `*` for all (NOMAD_NAMESPACE; `default`).
    pub namespace: String,
    /// The ACL token (--token-file, else NOMAD_TOKEN).
    pub token: Option<String>,
    /// PEM CA certificates to trust (NOMAD_CACERT).
    pub ca_cert: Option<PathBuf>,
    /// Do not check the server's certificate (NOMAD_SKIP_VERIFY).
    pub skip_verify: bool,
    /// Entries per page of a list.
    pub per_page: u32,
}

/// Go's `strconv.ParseBool`, which NOMAD_SKIP_VERIFY is read with.
fn go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

impl AddressOptions {
    /// The options from the command line, then Nomad's environment
    /// variables (`api.DefaultConfig`): NOMAD_ADDR (when `address` is
    /// none), NOMAD_NAMESPACE, NOMAD_TOKEN (when `token_file` is none),
    /// NOMAD_CACERT, NOMAD_SKIP_VERIFY. None when there is no address.
    pub(crate) fn from_env(
        address: Option<&str>,
        namespace: Option<&str>,
        token_file: Option<&Path>,
    ) -> Result<Option<AddressOptions>, String> {
        let Some(url) = address.map(str::to_string).or_else(|| env("NOMAD_ADDR")) else {
            return Ok(None);
        };
        let token = match token_file {
            Some(path) => {
                let text = read_text_limited(path, 64 * 1024, "a token file's 64 KiB")
                    .map_err(|err| format!("{}: {}", one_line_path(path), read_error(err)))?;
                let token = text.trim().to_string();
                if token.is_empty() || token.chars().any(char::is_control) {
                    return Err(format!(
                        "{}: expected one ACL token (its secret ID) on one line",
                        one_line_path(path)
                    ));
                }
                Some(token)
            }
            None => env("NOMAD_TOKEN"),
        };
        let skip_verify = match env("NOMAD_SKIP_VERIFY") {
            None => false,
            Some(value) => go_bool(&value).ok_or_else(|| {
                format!(
                    "NOMAD_SKIP_VERIFY={}: expected true or false (as Go's strconv.ParseBool reads it)",
                    one_line(&value)
                )
            })?,
        };
        Ok(Some(AddressOptions {
            url,
            namespace: namespace
                .map(str::to_string)
                .or_else(|| env("NOMAD_NAMESPACE"))
                .unwrap_or_else(|| "default".into()),
            token,
            ca_cert: env("NOMAD_CACERT").map(PathBuf::from),
            skip_verify,
            per_page: IMPORT_PER_PAGE,
        }))
    }
}

fn read_error(err: ReadError) -> String {
    match err {
        ReadError::NotFound => "not found".into(),
        ReadError::Refused(message) => message,
    }
}

/// The HTTP source's limits: the real ones, or smaller ones in the tests.
#[derive(Clone, Copy)]
pub(super) struct HttpLimits {
    pub(super) timeout: Duration,
    pub(super) response_bytes: u64,
    pub(super) total_bytes: u64,
    pub(super) requests: usize,
}

impl HttpLimits {
    pub(super) const REAL: HttpLimits = HttpLimits {
        timeout: Duration::from_secs(IMPORT_REQUEST_TIMEOUT_SECS),
        response_bytes: MAX_FILE_BYTES as u64,
        total_bytes: IMPORT_MAX_TOTAL_BYTES,
        requests: IMPORT_MAX_ENTRIES,
    };
}

/// A list endpoint: its path, fixed query, and whether it is namespaced.
#[derive(Clone, Copy)]
struct List {
    path: &'static str,
    query: &'static str,
    namespaced: bool,
}

/// The export files and the endpoints they are saved from.
fn list_endpoint(file: &str) -> Option<List> {
    let (path, query, namespaced) = match file {
        "nodes.json" => ("/v1/nodes", "resources=true", false),
        "plugins.json" => ("/v1/plugins", "type=csi", false),
        "volumes.json" => ("/v1/volumes", "type=csi", true),
        "jobs.json" => ("/v1/jobs", "", true),
        "allocations.json" => ("/v1/allocations", "", true),
        _ => return None,
    };
    Some(List {
        path,
        query,
        namespaced,
    })
}

/// `node/<id>.json` and the like: the endpoint's path, and the kind whose
/// namespace the request names (volumes and jobs).
fn detail_endpoint(file: &str) -> Option<(String, Option<&'static str>)> {
    let (dir, name) = file.split_once('/')?;
    let id = name.strip_suffix(".json")?;
    let (prefix, kind) = match dir {
        "node" => ("/v1/node/", None),
        "plugin" => ("/v1/plugin/csi/", None),
        "volume" => ("/v1/volume/csi/", Some("volume")),
        "job" => ("/v1/job/", Some("job")),
        _ => return None,
    };
    Some((format!("{prefix}{}", escape(id, "")), kind))
}

/// Percent-encodes all but RFC 3986's unreserved characters and `keep`.
fn escape(text: &str, keep: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric()
            || b"-._~".contains(&byte)
            || keep.as_bytes().contains(&byte)
        {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A response's first line, short, for a message.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let line = text.trim().lines().next().unwrap_or("").trim();
    let short: String = line.chars().take(120).collect();
    let more = if short.len() < line.len() { "..." } else { "" };
    format!("{:?}", format!("{short}{more}"))
}

/// One response's body and the next page's token.
struct Page {
    body: String,
    next: Option<String>,
}

/// The entries a list page holds.
#[derive(Deserialize)]
#[serde(transparent)]
struct Entries<'t>(#[serde(borrow)] Vec<&'t RawValue>);

/// An entry's id and namespace (jobs and volumes).
#[derive(Deserialize)]
struct Owned {
    #[serde(rename = "ID", default)]
    id: String,
    #[serde(rename = "Namespace", default)]
    namespace: String,
}

/// The cluster behind an address, as an export.
pub(super) struct HttpExport {
    agent: ureq::Agent,
    /// `scheme://host:port`.
    base: String,
    options: AddressOptions,
    limits: HttpLimits,
    read_so_far: Cell<u64>,
    requests: Cell<usize>,
    /// (kind, id) to the namespace its list gave it.
    namespaces: RefCell<BTreeMap<(&'static str, String), String>>,
    /// Export file to the URL it was read from, for messages.
    fetched: RefCell<BTreeMap<String, String>>,
}

/// `scheme://host[:port]` of an address, refusing what Nomad's API client
/// could not use.
fn base_url(url: &str) -> Result<(String, Option<String>), String> {
    let shown = one_line(url);
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!(
            "{shown}: expected an address such as http://127.0.0.1:4646 (with http:// or https://)"
        ));
    };
    if scheme != "http" && scheme != "https" {
        return Err(format!(
            "{shown}: the {scheme}:// scheme is not supported; use http:// or https://"
        ));
    }
    let (host, path) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    if host.is_empty()
        || host.contains('@')
        || host.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "{shown}: expected a host and port after {scheme}:// (credentials in the address are not supported: use NOMAD_TOKEN)"
        ));
    }
    // Nomad's client keeps only the scheme and host (api.go newRequest).
    let note = (!path.is_empty() && path != "/").then(|| {
        format!(
            "warning: address {shown}: its path {:?} is ignored, as Nomad's API client ignores it",
            one_line(path)
        )
    });
    Ok((format!("{scheme}://{host}"), note))
}

/// The CA certificates of a PEM file.
fn ca_certs(path: &Path) -> Result<Vec<ureq::tls::Certificate<'static>>, String> {
    let shown = one_line_path(path);
    let bytes = read_limited(path, 1024 * 1024, "a CA file's 1 MiB")
        .map_err(|err| format!("NOMAD_CACERT {shown}: {}", read_error(err)))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&bytes) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(cert)) => certs.push(cert),
            Ok(_) => {}
            Err(err) => return Err(format!("NOMAD_CACERT {shown}: not PEM: {err}")),
        }
    }
    if certs.is_empty() {
        return Err(format!("NOMAD_CACERT {shown}: no PEM certificate in it"));
    }
    Ok(certs)
}

impl HttpExport {
    /// The source for `options`, and a note on what it ignores or weakens.
    pub(super) fn new(
        options: &AddressOptions,
        limits: HttpLimits,
    ) -> Result<(HttpExport, Vec<String>), String> {
        let (base, note) = base_url(&options.url)?;
        let mut notes: Vec<String> = note.into_iter().collect();
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Some(path) = &options.ca_cert {
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&ca_certs(path)?));
        }
        if options.skip_verify {
            tls = tls.disable_verification(true);
            notes.push(format!(
                "warning: NOMAD_SKIP_VERIFY: {} is trusted without checking its certificate",
                one_line(&base)
            ));
        }
        if options.namespace.is_empty() || options.namespace.chars().any(char::is_control) {
            return Err("--namespace: expected a namespace name, or * for all".into());
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(limits.timeout))
            .max_redirects(0)
            .user_agent(format!("plansim/{}", env!("CARGO_PKG_VERSION")))
            .tls_config(tls.build())
            .build();
        let export = HttpExport {
            agent: ureq::Agent::new_with_config(config),
            base,
            options: options.clone(),
            limits,
            read_so_far: Cell::new(0),
            requests: Cell::new(0),
            namespaces: RefCell::new(BTreeMap::new()),
            fetched: RefCell::new(BTreeMap::new()),
        };
        Ok((export, notes))
    }

    /// The URL an export file was read from (its first page), or the
    /// file's name if it was not read.
    pub(super) fn shown(&self, file: &str) -> String {
        self.fetched
            .borrow()
            .get(file)
            .cloned()
            .unwrap_or_else(|| file.to_string())
    }

    /// The base address, as messages name it.
    pub(super) fn base(&self) -> &str {
        &self.base
    }

    fn list_url(&self, list: &List, token: Option<&str>) -> String {
        let mut query: Vec<String> = Vec::new();
        if !list.query.is_empty() {
            query.push(list.query.to_string());
        }
        if list.namespaced {
            query.push(format!(
                "namespace={}",
                escape(&self.options.namespace, "*")
            ));
        }
        query.push(format!("per_page={}", self.options.per_page));
        if let Some(token) = token {
            query.push(format!("next_token={}", escape(token, "")));
        }
        format!("{}{}?{}", self.base, list.path, query.join("&"))
    }

    /// GETs `url`: its body, or None for a 404 when `missing_ok`.
    fn get(&self, url: &str, missing_ok: bool) -> Result<Option<Page>, String> {
        let shown = one_line(url).into_owned();
        let count = self.requests.get() + 1;
        if count > self.limits.requests {
            return Err(format!(
                "{shown}: more than {} requests (IMPORT_MAX_ENTRIES): refused",
                self.limits.requests
            ));
        }
        self.requests.set(count);
        let mut request = self.agent.get(url).header("Accept", "application/json");
        if let Some(token) = &self.options.token {
            request = request.header("X-Nomad-Token", token);
        }
        let mut response = request
            .call()
            .map_err(|err| format!("{shown}: {}", self.call_error(&err)))?;
        let status = response.status().as_u16();
        let next = response
            .headers()
            .get("X-Nomad-NextToken")
            .and_then(|value| value.to_str().ok())
            .filter(|token| !token.is_empty())
            .map(str::to_string);
        let (limit, limit_name) = self.limit_for(url);
        if let Some(length) = response.body().content_length()
            && length > limit
        {
            return Err(format!(
                "{shown}: the response is {length} bytes, more than {} ({limit_name}): refused",
                human_bytes(limit)
            ));
        }
        let body = response
            .body_mut()
            .with_config()
            .limit(limit)
            .read_to_vec()
            .map_err(|err| format!("{shown}: {}", self.body_error(&err, limit, limit_name)))?;
        self.read_so_far
            .set(self.read_so_far.get() + body.len() as u64);
        match status {
            200 => {}
            404 if missing_ok => return Ok(None),
            403 => {
                return Err(format!(
                    "{shown}: 403 permission denied ({}): set NOMAD_TOKEN, or --token-file, to an ACL token that may read nodes, CSI plugins and volumes, jobs and allocations (node:read, plugin:read, and read-job and csi-read-volume in the namespace)",
                    excerpt(&body)
                ));
            }
            code => return Err(format!("{shown}: HTTP {code} ({})", excerpt(&body))),
        }
        let body = String::from_utf8(body).map_err(|_| {
            format!("{shown}: the response is not UTF-8: not the JSON of Nomad's HTTP API")
        })?;
        Ok(Some(Page { body, next }))
    }

    /// A response's limit: MAX_FILE_BYTES, or for a page of allocations
    /// what is left of the total; never more than is left.
    fn limit_for(&self, url: &str) -> (u64, &'static str) {
        let left = self
            .limits
            .total_bytes
            .saturating_sub(self.read_so_far.get());
        let streamed = url.starts_with(&format!("{}/v1/allocations?", self.base));
        if streamed || left < self.limits.response_bytes {
            (left, "IMPORT_MAX_TOTAL_BYTES")
        } else {
            (self.limits.response_bytes, "MAX_FILE_BYTES")
        }
    }

    fn call_error(&self, err: &ureq::Error) -> String {
        let seconds = self.limits.timeout.as_secs_f64();
        match err {
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                "cannot connect: connection refused (is Nomad's HTTP API at this address? see --address, NOMAD_ADDR)".into()
            }
            ureq::Error::HostNotFound => "cannot connect: host not found (see --address, NOMAD_ADDR)".into(),
            ureq::Error::Timeout(_) => format!("no answer within {seconds}s: timed out"),
            ureq::Error::Rustls(tls) => format!(
                "TLS: {} (NOMAD_CACERT names the CA that signed the server's certificate; NOMAD_SKIP_VERIFY=true skips the check)",
                one_line(&tls.to_string())
            ),
            other => format!("cannot read: {}", one_line(&other.to_string())),
        }
    }

    fn body_error(&self, err: &ureq::Error, limit: u64, limit_name: &str) -> String {
        match err {
            ureq::Error::BodyExceedsLimit(_) => format!(
                "the response is larger than {} ({limit_name}): refused",
                human_bytes(limit)
            ),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                "the response ended before its Content-Length: truncated".into()
            }
            ureq::Error::Timeout(_) => format!(
                "no complete answer within {}s: timed out",
                self.limits.timeout.as_secs_f64()
            ),
            other => format!(
                "the response could not be read (truncated or damaged): {}",
                one_line(&other.to_string())
            ),
        }
    }

    /// A page's entries, refused if it is not a JSON list.
    fn entries<'t>(&self, page: &'t str, url: &str) -> Result<Vec<&'t RawValue>, String> {
        serde_json::from_str::<Entries>(page)
            .map(|entries| entries.0)
            .map_err(|err| {
                format!(
                    "{}: not a JSON list ({err}; the response begins {}): is {} Nomad's HTTP API?",
                    one_line(url),
                    excerpt(page.as_bytes()),
                    self.base
                )
            })
    }

    /// Every page of a list, as one JSON array.
    fn list(&self, file: &str, list: &List) -> Result<String, String> {
        let mut pages = Pages::new(self, file, list);
        let mut out = Vec::new();
        pages.read_to_end(&mut out).map_err(|err| err.to_string())?;
        String::from_utf8(out).map_err(|err| err.to_string())
    }

    /// Notes each entry's namespace (jobs, volumes) for its detail request;
    /// one id in two namespaces is refused (a scenario's ids are unique).
    fn note_namespaces(
        &self,
        kind: &'static str,
        entries: &[&RawValue],
        url: &str,
    ) -> Result<(), String> {
        let mut namespaces = self.namespaces.borrow_mut();
        for entry in entries {
            let Ok(owned) = serde_json::from_str::<Owned>(entry.get()) else {
                continue;
            };
            let key = (kind, owned.id.clone());
            if let Some(other) = namespaces.get(&key)
                && *other != owned.namespace
            {
                return Err(format!(
                    "{}: {kind} {:?} is in namespaces {:?} and {:?}: a scenario's {kind} ids are unique; import one namespace at a time (--namespace)",
                    one_line(url),
                    owned.id,
                    other,
                    owned.namespace
                ));
            }
            namespaces.insert(key, owned.namespace);
        }
        Ok(())
    }

    /// The detail for `node/<id>.json` and the like, if the cluster has it.
    fn detail(
        &self,
        file: &str,
        path: &str,
        kind: Option<&'static str>,
    ) -> Result<Option<String>, String> {
        let mut url = format!("{}{path}", self.base);
        if let Some(kind) = kind {
            let id = file
                .split_once('/')
                .and_then(|(_, name)| name.strip_suffix(".json"))
                .unwrap_or_default();
            let namespace = self
                .namespaces
                .borrow()
                .get(&(kind, id.to_string()))
                .cloned()
                .filter(|ns| !ns.is_empty())
                .unwrap_or_else(|| match self.options.namespace.as_str() {
                    "*" => "default".into(),
                    ns => ns.into(),
                });
            url.push_str(&format!("?namespace={}", escape(&namespace, "")));
        }
        self.fetched
            .borrow_mut()
            .insert(file.to_string(), url.clone());
        let Some(page) = self.get(&url, true)? else {
            return Ok(None);
        };
        if serde_json::from_str::<&RawValue>(&page.body).is_err() {
            return Err(format!(
                "{}: not JSON (the response begins {}): is {} Nomad's HTTP API?",
                one_line(&url),
                excerpt(page.body.as_bytes()),
                self.base
            ));
        }
        Ok(Some(page.body))
    }
}

impl ExportSource for HttpExport {
    fn listed(&self) -> Vec<String> {
        Vec::new()
    }

    fn read(&self, path: &str) -> Result<Option<String>, LoadError> {
        let failed = |message: String| file_error("", None, message);
        if let Some(list) = list_endpoint(path) {
            return self.list(path, &list).map(Some).map_err(failed);
        }
        match detail_endpoint(path) {
            Some((endpoint, kind)) => self.detail(path, &endpoint, kind).map_err(failed),
            None => Ok(None),
        }
    }

    /// A list streamed a page at a time (allocations: only one page is
    /// held at once).
    fn open(&self, path: &str) -> Result<Option<Box<dyn Read + '_>>, LoadError> {
        match list_endpoint(path) {
            Some(list) => Ok(Some(Box::new(Pages::new(self, path, &list)))),
            None => Ok(self
                .read(path)?
                .map(|text| Box::new(std::io::Cursor::new(text.into_bytes())) as Box<dyn Read>)),
        }
    }
}

/// A list's pages as one JSON array, each page fetched when the reader
/// reaches it.
struct Pages<'s> {
    source: &'s HttpExport,
    file: String,
    list: List,
    /// The next page's token; None before the first page.
    next: Option<String>,
    tokens: BTreeSet<String>,
    started: bool,
    finished: bool,
    entries: usize,
    buf: Vec<u8>,
    at: usize,
}

impl<'s> Pages<'s> {
    fn new(source: &'s HttpExport, file: &str, list: &List) -> Self {
        Pages {
            source,
            file: file.to_string(),
            list: *list,
            next: None,
            tokens: BTreeSet::new(),
            started: false,
            finished: false,
            entries: 0,
            buf: Vec::new(),
            at: 0,
        }
    }

    /// Fetches the next page into `buf`.
    fn fetch(&mut self) -> Result<(), String> {
        let source = self.source;
        let url = source.list_url(&self.list, self.next.as_deref());
        if !self.started {
            source
                .fetched
                .borrow_mut()
                .insert(self.file.clone(), url.clone());
        }
        let Some(page) = source.get(&url, false)? else {
            return Err(format!("{url}: not found"));
        };
        let entries = source.entries(&page.body, &url)?;
        match self.file.as_str() {
            "jobs.json" => source.note_namespaces("job", &entries, &url)?,
            "volumes.json" => source.note_namespaces("volume", &entries, &url)?,
            _ => {}
        }
        self.buf.clear();
        self.at = 0;
        if !self.started {
            self.buf.push(b'[');
            self.started = true;
        }
        for entry in &entries {
            if self.entries > 0 {
                self.buf.push(b',');
            }
            self.entries += 1;
            self.buf.extend_from_slice(entry.get().as_bytes());
        }
        match page.next {
            None => {
                self.buf.push(b']');
                self.finished = true;
            }
            Some(token) => {
                if !self.tokens.insert(token.clone()) {
                    return Err(format!(
                        "{}: the server gave the page token {:?} twice: refused (it would page forever)",
                        one_line(&url),
                        one_line(&token)
                    ));
                }
                self.next = Some(token);
            }
        }
        Ok(())
    }
}

impl Read for Pages<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.buf.len() {
            if self.finished {
                return Ok(0);
            }
            self.fetch().map_err(std::io::Error::other)?;
        }
        let n = (self.buf.len() - self.at).min(out.len());
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Serves each connection the next of `answers` (raw HTTP), once each.
    fn serve(answers: Vec<Vec<u8>>) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for answer in answers {
                let Ok((mut stream, _)) = listener.accept() else {
                    return;
                };
                let mut head = [0u8; 4096];
                let _ = std::io::Read::read(&mut stream, &mut head);
                if answer.is_empty() {
                    // Never answers: the client's timeout ends it.
                    std::thread::sleep(Duration::from_secs(2));
                }
                let _ = stream.write_all(&answer);
            }
        });
        address
    }

    fn chunked(body: &[u8], next: Option<&str>) -> Vec<u8> {
        let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n".to_vec();
        if let Some(next) = next {
            out.extend(format!("X-Nomad-NextToken: {next}\r\n").as_bytes());
        }
        out.extend(b"\r\n");
        for chunk in body.chunks(100) {
            out.extend(format!("{:x}\r\n", chunk.len()).as_bytes());
            out.extend(chunk);
            out.extend(b"\r\n");
        }
        out.extend(b"0\r\n\r\n");
        out
    }

    fn export(address: &str, limits: HttpLimits) -> HttpExport {
        let options = AddressOptions {
            url: address.to_string(),
            namespace: "default".into(),
            token: None,
            ca_cert: None,
            skip_verify: false,
            per_page: 10,
        };
        HttpExport::new(&options, limits).unwrap().0
    }

    const SMALL: HttpLimits = HttpLimits {
        timeout: Duration::from_millis(300),
        response_bytes: 1000,
        total_bytes: 1500,
        requests: 3,
    };

    fn list_of(bytes: usize) -> Vec<u8> {
        let mut body = vec![b' '; bytes];
        body[0] = b'[';
        body[bytes - 1] = b']';
        body
    }

    #[test]
    fn a_chunked_response_is_cut_at_its_limit_and_all_of_them_at_the_total() {
        let address = serve(vec![chunked(&list_of(1200), None)]);
        let err = export(&address, SMALL).read("plugins.json").unwrap_err();
        assert!(err.message.contains("/v1/plugins?type=csi&per_page=10: the response is larger than 1000 bytes (MAX_FILE_BYTES)"), "{err}");
        let address = serve(vec![
            chunked(&list_of(900), None),
            chunked(&list_of(900), None),
        ]);
        let source = export(&address, SMALL);
        assert!(source.read("plugins.json").unwrap().is_some());
        let err = source.read("jobs.json").unwrap_err();
        assert!(
            err.message
                .contains("larger than 600 bytes (IMPORT_MAX_TOTAL_BYTES)"),
            "{err}"
        );
    }

    #[test]
    fn pages_are_bounded_in_number_and_never_loop() {
        let page = |next| chunked(b"[]", Some(next));
        let address = serve(vec![page("a"), page("b"), page("c"), page("d")]);
        let err = export(&address, SMALL).read("nodes.json").unwrap_err();
        assert!(
            err.message
                .contains("more than 3 requests (IMPORT_MAX_ENTRIES)"),
            "{err}"
        );
        let address = serve(vec![page("a"), page("a")]);
        let err = export(&address, SMALL).read("nodes.json").unwrap_err();
        assert!(
            err.message
                .contains("next_token=a: the server gave the page token \"a\" twice"),
            "{err}"
        );
    }

    #[test]
    fn a_server_that_does_not_answer_times_out() {
        let address = serve(vec![Vec::new()]);
        let err = export(&address, SMALL).read("nodes.json").unwrap_err();
        assert!(err.message.contains("within 0.3s: timed out"), "{err}");
    }

    #[test]
    fn ids_are_escaped_in_paths_and_namespaces_follow_the_list() {
        assert_eq!(
            detail_endpoint("job/a b/../c.json").unwrap().0,
            "/v1/job/a%20b%2F..%2Fc"
        );
        assert_eq!(escape("*", "*"), "*");
        assert_eq!(go_bool("T"), Some(true));
        assert_eq!(go_bool("yes"), None);
        assert!(
            base_url("https://nomad.example:4646/ui/")
                .unwrap()
                .1
                .is_some()
        );
        assert!(base_url("http://user:pw@host:4646").is_err());
    }
}
