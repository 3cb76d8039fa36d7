//! The SSRF guard: a destination URL must not lead the relay into our own
//! network. Every address a destination resolves to is checked before a
//! connection is made (the guard is the HTTP client's DNS resolver, so the
//! address checked is the address connected to: no DNS-rebinding window),
//! and an IP-literal host is checked before the request is built.
//!
//! Refused unless the destination lists them in `allowed_networks`:
//! loopback, private (RFC 1918, unique-local IPv6, site-local, CGNAT
//! 100.64/10), link-local, cloud metadata endpoints (169.254.169.254,
//! fd00:ec2::254, 169.254.170.2, 169.254.170.23), unspecified, multicast,
//! broadcast and reserved/documentation ranges. IPv4-mapped, IPv4-compatible
//! and NAT64 (64:ff9b::/96) IPv6 addresses are judged by the IPv4 address
//! inside.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

use ipnet::IpNet;

/// Why an address is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// RFC 1918, fc00::/7, fec0::/10, 100.64.0.0/10.
    Private,
    /// 169.254.0.0/16, fe80::/10.
    LinkLocal,
    /// A cloud instance/task metadata endpoint.
    Metadata,
    /// 0.0.0.0/8, ::.
    Unspecified,
    /// Multicast and broadcast.
    Multicast,
    /// Reserved, benchmarking or documentation ranges.
    Reserved,
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Category::Loopback => "loopback",
            Category::Private => "private",
            Category::LinkLocal => "link-local",
            Category::Metadata => "cloud metadata",
            Category::Unspecified => "unspecified",
            Category::Multicast => "multicast/broadcast",
            Category::Reserved => "reserved",
        })
    }
}

/// An address the guard refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "refused by the SSRF guard: {host} resolves to {address} ({category}); list it in the \
     destination's allowed_networks if this is intended"
)]
pub struct Refused {
    /// The host as written in the URL.
    pub host: String,
    /// The offending address.
    pub address: IpAddr,
    /// Why it is refused.
    pub category: Category,
}

/// The category of a non-public address, `None` for a public one.
pub fn classify(ip: IpAddr) -> Option<Category> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Category> {
    let [a, b, c, d] = ip.octets();
    let metadata = [
        [169, 254, 169, 254], // EC2/Lambda instance metadata
        [169, 254, 170, 2],   // ECS task metadata and credentials
        [169, 254, 170, 23],  // EKS pod identity
    ];
    Some(match (a, b) {
        _ if metadata.contains(&[a, b, c, d]) => Category::Metadata,
        (0, _) => Category::Unspecified,
        (127, _) => Category::Loopback,
        (10, _) | (192, 168) => Category::Private,
        (172, 16..=31) => Category::Private,
        (100, 64..=127) => Category::Private,
        (169, 254) => Category::LinkLocal,
        (224..=239, _) => Category::Multicast,
        _ if ip.is_broadcast() => Category::Multicast,
        (240..=255, _) => Category::Reserved,
        (192, 0) if c == 0 || c == 2 => Category::Reserved,
        (198, 18..=19) => Category::Reserved,
        (198, 51) if c == 100 => Category::Reserved,
        (203, 0) if c == 113 => Category::Reserved,
        _ => return None,
    })
}

fn classify_v6(ip: Ipv6Addr) -> Option<Category> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let s = ip.segments();
    // NAT64 (64:ff9b::/96) and the deprecated IPv4-compatible ::a.b.c.d
    if (s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0])
        || (s[0..6] == [0; 6] && s[6] != 0)
    {
        let [hi, lo] = [s[6].to_be_bytes(), s[7].to_be_bytes()];
        return classify_v4(Ipv4Addr::new(hi[0], hi[1], lo[0], lo[1]));
    }
    Some(match s[0] {
        _ if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x254) => Category::Metadata,
        _ if ip.is_unspecified() => Category::Unspecified,
        _ if ip.is_loopback() => Category::Loopback,
        0xfc00..=0xfdff => Category::Private,
        0xfe80..=0xfebf => Category::LinkLocal,
        0xfec0..=0xfeff => Category::Private,
        0xff00..=0xffff => Category::Multicast,
        0x2001 if s[1] == 0x0db8 => Category::Reserved,
        0x0100 if s[1..4] == [0, 0, 0] => Category::Reserved,
        _ => return None,
    })
}

/// The guard of one destination: the refused categories, minus the
/// networks the destination explicitly allows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NetworkGuard {
    allowed: Vec<IpNet>,
}

impl NetworkGuard {
    /// A guard allowing `allowed` on top of the public internet.
    pub fn new(allowed: Vec<IpNet>) -> Self {
        Self { allowed }
    }

    /// Whether `host` may be contacted at `address`.
    pub fn check(&self, host: &str, address: IpAddr) -> Result<(), Refused> {
        let canonical = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
            v4 => v4,
        };
        if self
            .allowed
            .iter()
            .any(|net| net.contains(&address) || net.contains(&canonical))
        {
            return Ok(());
        }
        match classify(address) {
            None => Ok(()),
            Some(category) => Err(Refused {
                host: host.to_string(),
                address,
                category,
            }),
        }
    }

    /// Checks every resolved address: one refused address refuses the host
    /// (a name resolving to a mix of public and internal addresses is an
    /// attack or a mistake either way).
    pub fn check_all(&self, host: &str, addresses: &[IpAddr]) -> Result<(), Refused> {
        addresses.iter().try_for_each(|a| self.check(host, *a))
    }

    /// Checks a URL whose host is an IP literal (such URLs never reach the
    /// resolver); a host name is left to [`GuardedResolver`].
    pub fn check_url(&self, url: &reqwest::Url) -> Result<(), Refused> {
        let host = url.host_str().unwrap_or_default();
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        match literal.parse::<IpAddr>() {
            Ok(address) => self.check(host, address),
            Err(_) => Ok(()),
        }
    }
}

/// Name resolution, the port under the guard (the system resolver in
/// production, a table in tests).
///
/// Error contract: an `io::Error` when the name does not resolve.
pub trait Lookup: Send + Sync + fmt::Debug {
    /// The addresses of `host`.
    fn lookup(
        &self,
        host: &str,
    ) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'static>>;
}

/// The system resolver (`getaddrinfo` on a blocking thread, via tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(
        &self,
        host: &str,
    ) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'static>> {
        let host = host.to_string();
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    }
}

/// reqwest's DNS resolver with the guard in front: resolves, checks every
/// address, and hands the client only addresses the guard allowed.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    guard: NetworkGuard,
    lookup: Arc<dyn Lookup>,
}

impl GuardedResolver {
    /// A resolver for `guard` over `lookup`.
    pub fn new(guard: NetworkGuard, lookup: Arc<dyn Lookup>) -> Self {
        Self { guard, lookup }
    }

    /// Resolves `host` and checks the result (what the HTTP client calls).
    pub async fn resolve_checked(&self, host: &str) -> Result<Vec<IpAddr>, ResolveError> {
        let addresses = self
            .lookup
            .lookup(host)
            .await
            .map_err(|e| ResolveError::Lookup(format!("cannot resolve {host}: {e}")))?;
        if addresses.is_empty() {
            return Err(ResolveError::Lookup(format!("{host} has no addresses")));
        }
        self.guard.check_all(host, &addresses)?;
        Ok(addresses)
    }
}

/// Why [`GuardedResolver`] gave no address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The name did not resolve.
    #[error("{0}")]
    Lookup(String),
    /// The guard refused an address.
    #[error(transparent)]
    Refused(#[from] Refused),
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let this = self.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addresses = this.resolve_checked(&host).await?;
            let addrs: reqwest::dns::Addrs =
                Box::new(addresses.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    //! Decisions only: nothing here opens a connection.
    use std::collections::HashMap;

    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("address")
    }

    fn refused(guard: &NetworkGuard, address: &str) -> Option<Category> {
        guard.check("host", ip(address)).err().map(|r| r.category)
    }

    #[test]
    fn internal_addresses_are_refused_by_default() {
        let g = NetworkGuard::default();
        for (address, category) in [
            ("169.254.169.254", Category::Metadata),
            ("169.254.170.2", Category::Metadata),
            ("fd00:ec2::254", Category::Metadata),
            ("10.0.0.1", Category::Private),
            ("172.16.5.4", Category::Private),
            ("172.31.255.255", Category::Private),
            ("192.168.1.1", Category::Private),
            ("100.64.0.1", Category::Private),
            ("fd00::1", Category::Private),
            ("fc00::1", Category::Private),
            ("fec0::1", Category::Private),
            ("127.0.0.1", Category::Loopback),
            ("127.255.0.9", Category::Loopback),
            ("::1", Category::Loopback),
            ("169.254.1.1", Category::LinkLocal),
            ("fe80::1", Category::LinkLocal),
            ("0.0.0.0", Category::Unspecified),
            ("::", Category::Unspecified),
            ("224.0.0.1", Category::Multicast),
            ("255.255.255.255", Category::Multicast),
            ("ff02::1", Category::Multicast),
            ("240.0.0.1", Category::Reserved),
            ("192.0.2.10", Category::Reserved),
            ("198.18.0.1", Category::Reserved),
            ("2001:db8::1", Category::Reserved),
            // IPv4 inside IPv6 is judged by the IPv4 address
            ("::ffff:169.254.169.254", Category::Metadata),
            ("::ffff:10.0.0.1", Category::Private),
            ("::ffff:127.0.0.1", Category::Loopback),
            ("64:ff9b::a00:1", Category::Private),
            ("::10.0.0.1", Category::Private),
        ] {
            assert_eq!(refused(&g, address), Some(category), "{address}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        let g = NetworkGuard::default();
        for address in [
            "93.184.215.14",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(refused(&g, address), None, "{address}");
        }
    }

    #[test]
    fn loopback_is_refused_unless_the_destination_allows_it() {
        let strict = NetworkGuard::default();
        let local = NetworkGuard::new(vec![
            "127.0.0.0/8".parse().expect("cidr"),
            "::1/128".parse().expect("cidr"),
        ]);
        assert_eq!(refused(&strict, "127.0.0.1"), Some(Category::Loopback));
        assert_eq!(refused(&local, "127.0.0.1"), None);
        assert_eq!(refused(&local, "::1"), None);
        assert_eq!(refused(&local, "::ffff:127.0.0.1"), None);
        // allowing loopback allows nothing else
        assert_eq!(refused(&local, "10.0.0.1"), Some(Category::Private));
        assert_eq!(refused(&local, "169.254.169.254"), Some(Category::Metadata));
    }

    #[test]
    fn ip_literal_urls_are_checked_before_any_request() {
        let g = NetworkGuard::default();
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://10.0.0.1:8080/hook",
            "http://[fd00::1]/hook",
            "http://127.0.0.1:3000/webhooks/demo",
        ] {
            let url = reqwest::Url::parse(url).expect("url");
            assert!(g.check_url(&url).is_err(), "{url}");
        }
        let named = reqwest::Url::parse("https://hooks.example.com/x").expect("url");
        assert_eq!(g.check_url(&named), Ok(()), "names go to the resolver");
    }

    #[derive(Debug)]
    struct Table(HashMap<&'static str, Vec<IpAddr>>);

    impl Lookup for Table {
        fn lookup(
            &self,
            host: &str,
        ) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'static>> {
            let found = self.0.get(host).cloned();
            let host = host.to_string();
            Box::pin(
                async move { found.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, host)) },
            )
        }
    }

    #[tokio::test]
    async fn the_resolver_refuses_names_that_resolve_inside() {
        let table = Arc::new(Table(HashMap::from([
            ("metadata.attacker.test", vec![ip("169.254.169.254")]),
            ("intranet.attacker.test", vec![ip("10.0.0.1")]),
            ("v6.attacker.test", vec![ip("fd00::1")]),
            (
                "mixed.attacker.test",
                vec![ip("93.184.215.14"), ip("10.0.0.1")],
            ),
            ("localhost", vec![ip("127.0.0.1"), ip("::1")]),
            ("hooks.example.com", vec![ip("93.184.215.14")]),
        ])));
        let strict = GuardedResolver::new(NetworkGuard::default(), table.clone());
        for host in [
            "metadata.attacker.test",
            "intranet.attacker.test",
            "v6.attacker.test",
            "mixed.attacker.test",
            "localhost",
        ] {
            match strict.resolve_checked(host).await {
                Err(ResolveError::Refused(r)) => assert_eq!(r.host, host),
                other => panic!("{host}: expected a refusal, got {other:?}"),
            }
        }
        assert_eq!(
            strict.resolve_checked("hooks.example.com").await,
            Ok(vec![ip("93.184.215.14")])
        );
        assert!(matches!(
            strict.resolve_checked("nowhere.test").await,
            Err(ResolveError::Lookup(_))
        ));
        let local = GuardedResolver::new(
            NetworkGuard::new(vec![
                "127.0.0.0/8".parse().expect("cidr"),
                "::1/128".parse().expect("cidr"),
            ]),
            table,
        );
        assert_eq!(
            local.resolve_checked("localhost").await,
            Ok(vec![ip("127.0.0.1"), ip("::1")])
        );
    }
}
