//! SageMaker and Lambda ARNs: which part names what, and whether an ARN is of this
//! deployment's region, account and pipeline.

/// `arn:<partition>:sagemaker:<region>:<12-digit account>:<resource>` → the resource part.
pub fn sagemaker_resource(arn: &str) -> Option<&str> {
    let mut parts = arn.splitn(6, ':');
    let (scheme, partition, service, region, account, resource) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    let ok = scheme == "arn"
        && partition.starts_with("aws")
        && service == "sagemaker"
        && !region.is_empty()
        && account.len() == 12
        && account.bytes().all(|b| b.is_ascii_digit());
    ok.then_some(resource)
}

/// `<pipeline>/execution/<id>` → (pipeline, id).
pub fn execution_parts(rest: &str) -> Option<(&str, &str)> {
    let (pipeline, id) = rest.split_once("/execution/")?;
    (!pipeline.is_empty() && !id.is_empty() && !id.contains('/')).then_some((pipeline, id))
}

/// The pipeline a pipeline execution ARN belongs to.
pub fn pipeline_of_execution(arn: &str) -> Option<&str> {
    let resource = sagemaker_resource(arn)?;
    let rest = resource.strip_prefix("pipeline/")?;
    execution_parts(rest).map(|(pipeline, _)| pipeline)
}

/// Where this deployment's SageMaker resources live: an ARN elsewhere names nothing the tools
/// made or may show, and is answered as unknown before any call. A part not known (no region
/// in the environment, no account in the invocation's context) is not compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scope<'a> {
    pub region: Option<&'a str>,
    pub account: Option<&'a str>,
    /// The pipelines whose runs the tools start (empty: not compared).
    pub pipelines: &'a [String],
}

impl Scope<'_> {
    /// The ARN is a SageMaker ARN of this region and account.
    pub fn holds(&self, arn: &str) -> bool {
        if sagemaker_resource(arn).is_none() {
            return false;
        }
        let mut parts = arn.split(':');
        let (region, account) = (parts.nth(3), parts.next());
        self.region.is_none_or(|r| region == Some(r))
            && self.account.is_none_or(|a| account == Some(a))
    }

    /// The ARN is a run of one of this deployment's pipelines (SageMaker writes the name in
    /// lowercase).
    pub fn holds_run(&self, arn: &str) -> bool {
        let Some(pipeline) = pipeline_of_execution(arn) else {
            return false;
        };
        self.holds(arn)
            && (self.pipelines.is_empty()
                || self
                    .pipelines
                    .iter()
                    .any(|p| p.eq_ignore_ascii_case(pipeline)))
    }
}

/// The account of a Lambda function's ARN (`arn:aws:lambda:<region>:<account>:function:<name>`),
/// when it has one.
pub fn account_of_function(function_arn: &str) -> Option<&str> {
    let account = function_arn.split(':').nth(4)?;
    (function_arn.starts_with("arn:")
        && account.len() == 12
        && account.bytes().all(|b| b.is_ascii_digit()))
    .then_some(account)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arns_of_another_region_account_or_pipeline_are_out_of_scope() {
        let pipelines = ["My-Pipeline".to_owned(), "retrain".to_owned()];
        let scope = Scope {
            region: Some("us-east-1"),
            account: Some("123456789012"),
            pipelines: &pipelines,
        };
        let ours = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/my-pipeline/execution/abc";
        assert!(scope.holds(ours) && scope.holds_run(ours));
        let also = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/retrain/execution/abc";
        assert!(
            scope.holds_run(also),
            "a catalog's pipeline is as much ours"
        );
        for other in [
            "arn:aws:sagemaker:eu-west-1:123456789012:pipeline/my-pipeline/execution/abc",
            "arn:aws:sagemaker:us-east-1:210987654321:pipeline/my-pipeline/execution/abc",
            "arn:aws:sagemaker:us-east-1:123456789012:pipeline/other/execution/abc",
            "arn:aws:sagemaker:us-east-1:123456789012:model-package/g/1",
            "arn:aws:s3:::bucket",
        ] {
            assert!(!scope.holds_run(other), "{other}");
        }
        let package = "arn:aws:sagemaker:us-east-1:123456789012:model-package/g/1";
        assert!(scope.holds(package));
        assert!(!scope.holds("arn:aws:sagemaker:us-east-1:210987654321:model-package/g/1"));
        assert!(
            Scope::default().holds_run(ours),
            "nothing known, nothing compared"
        );
        assert_eq!(
            account_of_function("arn:aws:lambda:us-east-1:123456789012:function:mcp-tools"),
            Some("123456789012")
        );
        assert_eq!(account_of_function("mcp-tools"), None);
    }
}
