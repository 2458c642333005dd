//! Who is calling, and what of the stored work is theirs. The front door establishes the
//! [`Principal`] once per request; everything below it sees only the [`Caller`] it gives: an
//! opaque owner tag, and whether items written before owners existed are visible.

use sha2::{Digest, Sha256};

use crate::util::hex;

/// The bearer token name that stands for the deployment's single shared token.
pub const DEFAULT_TOKEN_NAME: &str = "default";

/// An authenticated caller, as the front door identified it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// A SigV4-signed Function URL request: the IAM identity's ARN, an assumed-role session
    /// already reduced to its role (see [`Principal::iam`]), and that session's name, which
    /// names the person only where the role's trust policy pins it (docs/approvals.md).
    Iam {
        arn: String,
        session: Option<String>,
    },
    /// A named bearer token (`MCP_BEARER_TOKENS`; the single hash is `default`).
    Bearer { name: String },
    /// An OAuth access token's issuer and subject.
    OAuth { issuer: String, subject: String },
    /// The AgentCore Gateway: it authenticates users itself and invokes with its own role, so
    /// without a verified caller claim every Gateway user is this one caller.
    Gateway,
    /// `AUTH_MODE=none`, for local runs: one caller.
    Local,
}

impl Principal {
    /// The caller of a SigV4-signed request. Every session of an assumed role is the role:
    /// `arn:aws:sts::111122223333:assumed-role/Agent/session-1` and `…/Agent/session-2` are
    /// one caller. None for an empty ARN.
    pub fn iam(user_arn: &str) -> Option<Principal> {
        let arn = user_arn.trim();
        if arn.is_empty() {
            return None;
        }
        let (arn, session) = match arn.split_once(":assumed-role/") {
            Some((prefix, rest)) => {
                let (role, session) = match rest.split_once('/') {
                    Some((role, session)) if !session.is_empty() => (role, Some(session)),
                    _ => (rest.trim_end_matches('/'), None),
                };
                (format!("{prefix}:assumed-role/{role}"), session)
            }
            None => (arn.to_owned(), None),
        };
        Some(Principal::Iam {
            arn,
            session: session.map(str::to_owned),
        })
    }

    /// Whether this principal names one person, as an approver must be named: a bearer token's
    /// name, an OAuth subject, an IAM user, an assumed role's session; not a whole role (every
    /// session of it), the Gateway (every user of it) or the local caller.
    pub fn names_a_person(&self) -> bool {
        match self {
            Principal::Iam { arn, session } => session.is_some() || arn.contains(":user/"),
            Principal::Bearer { .. } | Principal::OAuth { .. } => true,
            Principal::Gateway | Principal::Local => false,
        }
    }

    /// A stable identity, unique across the kinds of principal.
    fn identity(&self) -> String {
        match self {
            Principal::Iam { arn, .. } => format!("iam\0{arn}"),
            Principal::Bearer { name } => format!("bearer\0{name}"),
            Principal::OAuth { issuer, subject } => format!("oauth\0{issuer}\0{subject}"),
            Principal::Gateway => "gateway".to_owned(),
            Principal::Local => "local".to_owned(),
        }
    }

    /// The identity of the person behind this principal, where it tells one apart from its
    /// owner: an assumed role's session. The owner's identity otherwise.
    fn person_identity(&self) -> String {
        match self {
            Principal::Iam {
                arn,
                session: Some(session),
            } => format!("iam\0{arn}/{session}"),
            _ => self.identity(),
        }
    }

    /// What the use cases are told of this principal.
    pub fn caller(&self) -> Caller {
        // Items from before owners existed were shared by everyone who could call: they stay
        // visible where "everyone" was the deployment's one kind of caller, never to OAuth
        // users, named tokens or the Gateway, who did not exist then.
        let reads_unowned = match self {
            Principal::Iam { .. } | Principal::Local => true,
            Principal::Bearer { name } => name == DEFAULT_TOKEN_NAME,
            Principal::OAuth { .. } | Principal::Gateway => false,
        };
        Caller {
            owner: Owner::of(&self.identity()),
            person: Owner::of(&self.person_identity()),
            reads_unowned,
        }
    }
}

/// An opaque tag for one principal: stored on its items and in its runs' descriptions instead
/// of the ARN or `sub` itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner(String);

impl Owner {
    /// 32 hex digits: the first 128 bits of a SHA-256 of the identity.
    pub const LEN: usize = 32;

    fn of(identity: &str) -> Owner {
        let digest = Sha256::digest(format!("mcp-tools owner v1\0{identity}").as_bytes());
        Owner(hex(&digest[..Self::LEN / 2]))
    }

    /// A tag read back from storage or a description; None unless it has a tag's shape.
    pub fn parse(text: &str) -> Option<Owner> {
        let text = text.trim();
        (text.len() == Self::LEN
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        .then(|| Owner(text.to_owned()))
    }

    /// An owner as an item stores it: matched exactly, whatever its shape (the tools wrote it).
    pub fn stored(text: String) -> Owner {
        Owner(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The caller as the use cases see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub owner: Owner,
    /// The person within the owner, in the same kind of tag: who an answer to a run's question
    /// is recorded as, and whom `APPROVERS` names. The owner's tag but for an assumed role's
    /// session, whose name tells the people sharing the role apart.
    pub person: Owner,
    /// Items with no owner (written before owners existed) are this caller's too.
    pub reads_unowned: bool,
}

impl Caller {
    /// Whether an item with this stored owner is the caller's. Anything else is answered
    /// exactly as an unknown id is.
    pub fn owns(&self, stored_owner: Option<&Owner>) -> bool {
        match stored_owner {
            Some(owner) => *owner == self.owner,
            None => self.reads_unowned,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_assumed_roles_sessions_are_one_caller_and_other_arns_stay_as_they_are() {
        let a = Principal::iam("arn:aws:sts::111122223333:assumed-role/Agent/session-1").unwrap();
        let b = Principal::iam("arn:aws:sts::111122223333:assumed-role/Agent/session-2").unwrap();
        assert_eq!(a.caller().owner, b.caller().owner);
        assert_eq!(
            a,
            Principal::Iam {
                arn: "arn:aws:sts::111122223333:assumed-role/Agent".into(),
                session: Some("session-1".into()),
            }
        );
        // The sessions are told apart only as persons.
        assert_ne!(a.caller().person, b.caller().person);
        assert!(a.names_a_person());
        let other = Principal::iam("arn:aws:sts::111122223333:assumed-role/Other/session-1");
        assert_ne!(a.caller().owner, other.unwrap().caller().owner);
        let user = Principal::iam("arn:aws:iam::111122223333:user/alice").unwrap();
        assert_eq!(
            user,
            Principal::Iam {
                arn: "arn:aws:iam::111122223333:user/alice".into(),
                session: None,
            }
        );
        assert_eq!(user.caller().person, user.caller().owner);
        assert!(user.names_a_person());
        for whole_role in [
            "arn:aws:iam::111122223333:role/Agent",
            "arn:aws:sts::111122223333:assumed-role/Agent",
            "arn:aws:sts::111122223333:assumed-role/Agent/",
        ] {
            let role = Principal::iam(whole_role).unwrap();
            assert!(!role.names_a_person(), "{whole_role}");
            assert_eq!(role.caller().person, role.caller().owner);
        }
        assert_eq!(Principal::iam("  "), None);
    }

    #[test]
    fn owners_are_opaque_distinct_and_stable() {
        let alice = Principal::OAuth {
            issuer: "https://issuer".into(),
            subject: "alice".into(),
        };
        let tag = alice.caller().owner;
        assert_eq!(tag.as_str().len(), Owner::LEN);
        assert!(!tag.as_str().contains("alice"));
        assert_eq!(Owner::parse(tag.as_str()), Some(tag.clone()));
        assert_eq!(alice.caller().owner, tag, "stable");
        let principals = [
            Principal::OAuth {
                issuer: "https://issuer".into(),
                subject: "bob".into(),
            },
            Principal::OAuth {
                issuer: "https://other".into(),
                subject: "alice".into(),
            },
            Principal::Bearer {
                name: "alice".into(),
            },
            Principal::Iam {
                arn: "alice".into(),
                session: None,
            },
            Principal::Gateway,
            Principal::Local,
        ];
        for p in &principals {
            assert_ne!(p.caller().owner, tag, "{p:?}");
        }
        for bad in [
            "",
            "team-a",
            &"G".repeat(32),
            &"a".repeat(31),
            &"A".repeat(32),
        ] {
            assert_eq!(Owner::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn unowned_items_belong_to_the_callers_that_shared_them_before() {
        let default = Principal::Bearer {
            name: DEFAULT_TOKEN_NAME.into(),
        };
        let named = Principal::Bearer { name: "a".into() };
        let oauth = Principal::OAuth {
            issuer: "i".into(),
            subject: "s".into(),
        };
        let iam = Principal::iam("arn:aws:iam::1:user/u").unwrap();
        for (p, sees) in [
            (&default, true),
            (&iam, true),
            (&Principal::Local, true),
            (&named, false),
            (&oauth, false),
            (&Principal::Gateway, false),
        ] {
            let caller = p.caller();
            assert_eq!(caller.owns(None), sees, "{p:?}");
            assert!(caller.owns(Some(&caller.owner)));
            assert!(!caller.owns(Some(&oauth.caller().owner)) || p == &oauth);
        }
    }
}
