//! A registered model's approval: a RegisterModel step leaves its model package
//! `PendingManualApproval` until someone sets `ModelApprovalStatus` (UpdateModelPackage). What a
//! decision writes, and what may change a package's status, are decided here.

use super::caller::Owner;

/// `ApprovalDescription`: SageMaker keeps at most this many characters.
pub const MAX_APPROVAL_DESCRIPTION_CHARS: usize = 1024;
/// A caller's comment: what is left of the description once it names who decided.
pub const MAX_COMMENT_CHARS: usize = 900;

pub const PENDING: &str = "PendingManualApproval";
pub const APPROVED: &str = "Approved";
pub const REJECTED: &str = "Rejected";

/// A person's decision on a model package, as UpdateModelPackage takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelDecision {
    pub approve: bool,
    /// `ApprovalDescription`: the caller's comment, then who decided.
    pub description: String,
}

impl ModelDecision {
    pub fn new(approve: bool, comment: Option<&str>, who: &Owner) -> Self {
        let verb = if approve { "approved" } else { "rejected" };
        let signed = format!("{verb} by caller {who} through MCP");
        let description = match comment.map(str::trim).filter(|c| !c.is_empty()) {
            Some(comment) => {
                let cut: String = comment.chars().take(MAX_COMMENT_CHARS).collect();
                format!("{cut} ({signed})")
            }
            None => signed,
        };
        debug_assert!(description.chars().count() <= MAX_APPROVAL_DESCRIPTION_CHARS);
        ModelDecision {
            approve,
            description,
        }
    }

    /// `ModelApprovalStatus` as SageMaker spells it.
    pub fn status(&self) -> &'static str {
        if self.approve {
            APPROVED
        } else {
            REJECTED
        }
    }
}

/// What a decision does to a package in `current` status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decide {
    /// It waits for a person: write the decision.
    Update,
    /// It already stands as asked (a retried call): nothing to write.
    Unchanged,
    /// It was decided the other way (or is in no approval flow): a person changes that in
    /// SageMaker itself, not through a tool an agent calls.
    Refused(String),
}

pub fn decide(current: Option<&str>, decision: &ModelDecision) -> Decide {
    match current {
        Some(PENDING) => Decide::Update,
        Some(status) if status == decision.status() => Decide::Unchanged,
        Some(status) => Decide::Refused(status.to_owned()),
        None => Decide::Refused("without an approval status".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::Principal;

    fn who() -> Owner {
        Principal::Local.caller().owner
    }

    #[test]
    fn the_description_says_who_decided_and_fits_sagemakers_bound() {
        let plain = ModelDecision::new(true, None, &who());
        assert_eq!(plain.status(), "Approved");
        assert_eq!(
            plain.description,
            format!("approved by caller {} through MCP", who())
        );
        let long = "x".repeat(5000);
        let commented = ModelDecision::new(false, Some(&long), &who());
        assert_eq!(commented.status(), "Rejected");
        assert!(commented.description.chars().count() <= MAX_APPROVAL_DESCRIPTION_CHARS);
        assert!(commented.description.ends_with("through MCP)"));
        let blank = ModelDecision::new(true, Some("  "), &who());
        assert_eq!(blank.description, plain.description);
    }

    #[test]
    fn only_a_pending_package_is_decided_and_a_retry_changes_nothing() {
        let approve = ModelDecision::new(true, None, &who());
        assert_eq!(decide(Some(PENDING), &approve), Decide::Update);
        assert_eq!(decide(Some(APPROVED), &approve), Decide::Unchanged);
        assert_eq!(
            decide(Some(REJECTED), &approve),
            Decide::Refused("Rejected".into())
        );
        assert!(matches!(decide(None, &approve), Decide::Refused(_)));
    }
}
