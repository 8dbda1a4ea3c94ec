"""How passwords are stored: Argon2id at the parameters OWASP's password storage guidance gives as its first choice
(19 MiB of memory, 2 passes, 1 lane). Django's own Argon2 defaults (100 MiB, 2 passes, 8 lanes) and its PBKDF2
(1,000,000 rounds of SHA-256) each cost about 0.23 s of CPU a check on this project's 2-core machines; these cost
about a fifth of that, so a shift's logins arriving at once wait seconds less, while each guess still needs 19 MiB
of memory, which is what makes Argon2id costly to attack on GPUs. Hashes stored another way (PBKDF2 from before,
Argon2 with other parameters) still check, and are stored again this way at the person's next login (Django's
``must_update``)."""

from __future__ import annotations

from django.contrib.auth.hashers import Argon2PasswordHasher


class StudioArgon2PasswordHasher(Argon2PasswordHasher):
    time_cost = 2
    memory_cost = 19 * 1024  # KiB
    parallelism = 1
