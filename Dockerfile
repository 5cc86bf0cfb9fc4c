# redlock in a container, for CI systems that run each step in one. The
# image holds the statically linked binary and nothing else: no shell, no
# libc, no CA certificates, no /etc/passwd.
#
# The context is a folder with the static binary in it, named redlock: the
# unpacked release tarball (redlock-VERSION-x86_64-linux-static/), which
# also carries this file, or what scripts/release stages. For example:
#
#   tar xzf redlock-0.1.0-x86_64-linux-static.tar.gz
#   docker build -t redlock redlock-0.1.0-x86_64-linux-static
#   docker run --rm -e REDLOCK_SERVERS=lock1:6379,lock2:6379,lock3:6379 \
#       redlock status deploy
#
# See docs/install.md ("In a container") for what works in it and what does
# not. scripts/release builds it with docker, or with podman where no docker
# daemon answers; scripts/check-release runs it.
FROM scratch
COPY redlock /usr/bin/redlock
COPY LICENSE-MIT LICENSE-APACHE /usr/share/doc/redlock/
ENTRYPOINT ["/usr/bin/redlock"]
CMD ["--help"]
