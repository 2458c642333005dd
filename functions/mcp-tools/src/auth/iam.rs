//! `AUTH_MODE=iam`: the Function URL's AWS_IAM auth has checked the SigV4 signature; the
//! caller is the identity Lambda put in the request's context.

use domain::caller::Principal;
use http::StatusCode;
use lambda_http::request::RequestContext;

use super::refusal::Refusal;

/// The IAM identity of a signed request, or the refusal of one that carries none.
pub fn principal(context: Option<&RequestContext>) -> Result<Principal, Refusal> {
    identity(context).ok_or_else(|| {
        Refusal::new(
            StatusCode::FORBIDDEN,
            "Forbidden: the request carries no IAM identity (the Function URL's auth type must be AWS_IAM)",
        )
    })
}

/// The IAM identity Lambda put in a SigV4-signed Function URL request's context.
fn identity(context: Option<&RequestContext>) -> Option<Principal> {
    let RequestContext::ApiGatewayV2(context) = context? else {
        return None;
    };
    let iam = context.authorizer.as_ref()?.iam.as_ref()?;
    Principal::iam(iam.user_arn.as_deref()?)
}
