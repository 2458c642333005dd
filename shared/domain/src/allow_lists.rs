//! What a run may be given, whatever tool sends it: every value that reaches SageMaker as a
//! pipeline parameter is held here. One naming an S3 location, in any form, lies under an
//! allowed prefix (the pipeline's role reads what it is given); an instance type is an allowed
//! one (its instances are billed to the account).

use super::training_input::{check_value, InputRefusal, S3Prefix};

/// The deployment's allow-lists (`TRAINING_INPUT_PREFIXES`, `TRAINING_INSTANCE_TYPES`).
#[derive(Debug, Clone, Copy)]
pub struct AllowLists<'a> {
    pub input_prefixes: &'a [S3Prefix],
    pub instance_types: &'a [String],
}

/// Why a pipeline parameter's value was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParameterRefusal {
    /// It names an S3 location the deployment does not allow.
    Input(InputRefusal),
    /// An instance type the deployment does not allow.
    InstanceType,
}

/// Whether a pipeline parameter `name`, set by the tool argument `argument`, may be `value`.
/// An instance type is known by the parameter's name (`...InstanceType`, any case), by the
/// argument's (`..._instance_type`), or by the value (`ml.` in any case); it must then be one of
/// the allowed types, as written. Any value is then read for an S3 location.
pub fn check_parameter(
    name: &str,
    argument: &str,
    value: &str,
    allowed: AllowLists<'_>,
) -> Result<(), ParameterRefusal> {
    let is_instance_type = names_instance_type(name)
        || names_instance_type(argument)
        || value
            .trim_start()
            .get(..3)
            .is_some_and(|p| p.eq_ignore_ascii_case("ml."));
    if is_instance_type && !allowed.instance_types.iter().any(|t| t == value) {
        return Err(ParameterRefusal::InstanceType);
    }
    check_value(value, allowed.input_prefixes)
        .map(|_| ())
        .map_err(ParameterRefusal::Input)
}

/// `TrainingInstanceType`, `instancetype`, `training_instance_type`: names ending so.
fn names_instance_type(name: &str) -> bool {
    let letters: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    letters.ends_with("instancetype")
}

#[cfg(test)]
mod tests {
    use super::*;
    use InputRefusal::*;

    fn check(name: &str, value: &str) -> Result<(), ParameterRefusal> {
        let prefixes = [
            S3Prefix::parse("s3://io-bucket/train/").unwrap(),
            S3Prefix::parse("s3://datasets/shared/").unwrap(),
        ];
        let types = ["ml.m5.xlarge".to_owned(), "ml.g5.xlarge".to_owned()];
        let allowed = AllowLists {
            input_prefixes: &prefixes,
            instance_types: &types,
        };
        check_parameter(name, "arg", value, allowed)
    }

    #[test]
    fn every_form_of_an_allowed_location_passes() {
        for value in [
            "s3://io-bucket/train/x.csv",
            "s3a://io-bucket/train/x.csv",
            "S3N://io-bucket/train/",
            "https://io-bucket.s3.amazonaws.com/train/x.csv",
            "https://io-bucket.s3.us-east-1.amazonaws.com/train/x.csv",
            "https://io-bucket.s3-us-east-1.amazonaws.com/train/x.csv",
            "https://s3.amazonaws.com/io-bucket/train/x.csv",
            "https://s3.us-east-1.amazonaws.com/io-bucket/train/x.csv",
            "https://s3.dualstack.us-east-1.amazonaws.com/io-bucket/train/x.csv",
            "https://IO-BUCKET.S3.AMAZONAWS.COM/train/x.csv",
            "https://io-bucket.s3.amazonaws.com/train/my%20file.csv",
            "arn:aws:s3:::datasets/shared/x",
            "s3://datasets/shared/a/b",
        ] {
            assert_eq!(check("InputDataUri", value), Ok(()), "{value}");
        }
    }

    #[test]
    fn every_form_of_a_location_elsewhere_is_refused() {
        let cases = [
            ("s3://io-bucket/inputs/x", Outside),
            ("s3a://io-bucket/inputs/x", Outside),
            ("s3n://other/train/x", Outside),
            ("S3A://io-bucket/inputs/x", Outside),
            ("https://io-bucket.s3.amazonaws.com/inputs/x", Outside),
            (
                "https://io-bucket.s3.eu-west-1.amazonaws.com/inputs/x",
                Outside,
            ),
            (
                "https://io-bucket.s3-eu-west-1.amazonaws.com/inputs/x",
                Outside,
            ),
            ("https://s3.us-east-1.amazonaws.com/other/train/x", Outside),
            ("https://s3.amazonaws.com/other/train/x", Outside),
            (
                "https://s3.dualstack.us-east-1.amazonaws.com/io-bucket/inputs/x",
                Outside,
            ),
            ("HTTPS://IO-BUCKET.S3.AMAZONAWS.COM/inputs/x", Outside),
            ("https://io-bucket.s3.amazonaws.com/TRAIN/x", Outside),
            ("io-bucket.s3.amazonaws.com/inputs/x", Outside),
            ("arn:aws:s3:::io-bucket/inputs/x", Outside),
            // Encoded so that one reading is under the prefix and another is not.
            ("s3://io-bucket/tr%61in/x", Outside),
            (
                "https://io-bucket.s3.amazonaws.com/%74rain/../inputs/x",
                Segments,
            ),
            // Dot segments, however written: refused, not resolved into the prefix.
            ("s3://io-bucket/train/../inputs/x", Segments),
            ("s3a://io-bucket/train/%2e%2e/inputs/x", Segments),
            ("s3://io-bucket/train/%252E%252E/inputs/x", Segments),
            (
                "https://io-bucket.s3.amazonaws.com/train/../inputs/x",
                Segments,
            ),
            (
                "https://io-bucket.s3.amazonaws.com/inputs/../train/x",
                Segments,
            ),
            (
                "https://s3.amazonaws.com/io-bucket/train/%2E%2E/inputs",
                Segments,
            ),
            (
                "https://io-bucket.s3.amazonaws.com/train/.%2e/inputs",
                Segments,
            ),
            (
                "https://io-bucket.s3.amazonaws.com/train\\..\\inputs",
                Segments,
            ),
            ("s3://io-bucket/train//x", Segments),
            (
                "https://ap-123456789012.s3-accesspoint.us-east-1.amazonaws.com/train/x",
                AccessPoint,
            ),
            ("s3:/io-bucket/train/x", NotS3),
            ("s3://IO-BUCKET/train/x", NotS3),
            ("s3://io-bucket/train/,s3://other/x", NotS3),
            ("--input s3://io-bucket/inputs/x", NotS3),
        ];
        for (value, refusal) in cases {
            assert_eq!(
                check("InputDataUri", value),
                Err(ParameterRefusal::Input(refusal)),
                "{value}"
            );
        }
    }

    #[test]
    fn values_naming_no_location_pass_under_any_name() {
        for value in ["3", "0.92", "true", "", "intent-v2", "train/x.csv"] {
            assert_eq!(check("Anything", value), Ok(()), "{value}");
        }
    }

    #[test]
    fn instance_types_are_known_by_name_or_by_ml_prefix() {
        assert_eq!(check("TrainingInstanceType", "ml.m5.xlarge"), Ok(()));
        assert_eq!(check("Compute", "ml.g5.xlarge"), Ok(()));
        for (name, value) in [
            ("TrainingInstanceType", "ml.p5.48xlarge"),
            ("trainingINSTANCETYPE", "ml.p5.48xlarge"),
            ("ProcessingInstanceType", "p5.48xlarge"),
            ("InstanceType", ""),
            ("Compute", "ml.p5.48xlarge"),
            ("Compute", "ML.P5.48XLARGE"),
            ("Compute", "Ml.m5.xlarge"),
            ("Compute", " ml.p5.48xlarge"),
            ("TrainingInstanceType", "ML.M5.XLARGE"),
        ] {
            assert_eq!(
                check(name, value),
                Err(ParameterRefusal::InstanceType),
                "{name}={value}"
            );
        }
        let prefixes = [S3Prefix::parse("s3://b/").unwrap()];
        let types = ["ml.m5.xlarge".to_owned()];
        let allowed = AllowLists {
            input_prefixes: &prefixes,
            instance_types: &types,
        };
        // By the argument's name too, whatever the pipeline calls the parameter.
        assert_eq!(
            check_parameter("Compute", "training_instance_type", "p5", allowed),
            Err(ParameterRefusal::InstanceType)
        );
        assert_eq!(
            check_parameter("Compute", "worker_count", "p5", allowed),
            Ok(())
        );
    }
}
