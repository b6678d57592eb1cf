"""LTI 1.3 (1EdTech) tool side of ppo-course: the course platform launches the quiz and receives grades.

Instructor side only (never in the student bundle). One module per concern:

- ``claims``        the specification's claim names, message types, roles and media types;
- ``registry``      platform registrations (issuer, client id, deployments, endpoints), one JSON file;
- ``tool_keys``     the tool's own RSA key pair, its JWKS, rotation;
- ``launch``        OIDC third-party login initiation and the id_token launch validation;
- ``contexts``      the courses (LTI contexts) each registration serves, and their AGS/NRPS endpoints;
- ``deep_linking``  the signed LtiDeepLinkingResponse (an instructor adds the quiz or one stop);
- ``services``      OAuth 2 client-credentials tokens, Assignment and Grade Services, Names and Role Provisioning;
- ``passback``      an idempotent, retried record of every score posted to the platform;
- ``tables``        the tool's tables in the course store (``lms.engine``).

A graded batch's scores are published to the course's line items by the grader
(``grader.platforms.lti_publish``); the quiz server mounts the tool (``quiz_bank.instructor.server.lti_glue``).

JOSE (JWS/JWT/JWK) is joserfc's; no cryptography is written here. Sources:
LTI Core 1.3 (https://www.imsglobal.org/spec/lti/v1p3/), 1EdTech Security Framework 1.0,
LTI Advantage: AGS 2.0, NRPS 2.0, Deep Linking 2.0.
"""
