/* SPDX-License-Identifier: MIT */
/*
 * A hostile sender for tests: from a plain UDP socket, sends a live switch
 * every kind of packet it must drop without harm to the jobs it serves.
 * Given the job id of a running job (and, to act as an on-path attacker who
 * captured its packets, its token from $INA_JOB_TOKEN), it sends, 'count'
 * times each: a DATA with a wrong token for that job; DATA for a job id that
 * does not exist; truncated headers; a payload longer than the header says;
 * a block past the tensor; an unknown version; an unknown type; a replay of
 * a DATA of round 0 with the right token (from an address the rank is not
 * bound to); sub-block DATA
 * (docs/PROTOCOL.md 2.7) with a bad mask (a bit past the block's last
 * sub-block, an empty mask, B not a multiple of the sub-blocks) and with a
 * short payload (values missing, less than the mask); and a flood of
 * JOINs for new job ids with random tokens, whose answers it reads: their
 * bytes over the JOINs' (the reflection ratio). Prints what it sent. The test
 * (udp_hostile.sh) then checks the switch's counters and that the job's
 * sums stayed exact.
 * Usage: hostile ADDR:PORT JOB_ID COUNT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "ina/token.h"
#include "ina/util.h"
#include "ina/wire.h"

#define PKT_MAX 2048

struct target {
	int fd;
	struct sockaddr_in sw;
	uint32_t job;
	uint64_t token; /* the job's, 0 if unknown */
	uint64_t rng;
	unsigned sent;
};

static void
send_raw(struct target *t, const void *buf, size_t len)
{
	if (sendto(t->fd, buf, len, 0, (const struct sockaddr *)&t->sw, sizeof(t->sw)) < 0) {
		perror("hostile: sendto");
		exit(1);
	}
	t->sent++;
	/* Do not outrun the socket buffers: these are to be counted, not lost. */
	if (t->sent % 64 == 0)
		usleep(1000);
}

/* A well-formed DATA header of job 'job' with token 'token', lane 0 block 0. */
static struct ina_hdr
data_hdr(uint32_t job, uint64_t token, uint32_t round)
{
	struct ina_hdr h;

	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = INA_T_DATA;
	h.encoding = INA_ENC_F32;
	h.job_id = job;
	h.epoch = 1;
	h.rank = 0;
	h.lane = 0;
	h.tensor_id = 0;
	h.round = round;
	h.tensor_len = 64;
	h.block = 0;
	h.next = INA_BLOCK_END;
	h.block_size = 64;
	h.n_elems = 64;
	h.token = token;
	return h;
}

static void
send_hdr(struct target *t, const struct ina_hdr *h, size_t payload)
{
	uint8_t buf[PKT_MAX];

	memset(buf, 0, sizeof(buf));
	ina_wire_encode_hdr(h, buf);
	send_raw(t, buf, INA_HDR_SIZE + payload);
}

/*
 * Sub-block DATA of the job, right token, that the switch must drop: B 64 in
 * 4 sub-blocks of 16, with the mask 'mask' (its 4 bytes) and 'values' values.
 */
static void
send_sub(struct target *t, uint16_t block_size, uint8_t mask, size_t values, size_t extra)
{
	uint8_t buf[PKT_MAX];
	struct ina_hdr h = data_hdr(t->job, t->token, 1);

	h.block_size = block_size;
	h.sub_log = 2;
	memset(buf, 0, sizeof(buf));
	ina_wire_encode_hdr(&h, buf);
	buf[INA_HDR_SIZE] = mask;
	send_raw(t, buf, INA_HDR_SIZE + (values ? 4 + 4 * values : extra));
}

static void
send_join_flood(struct target *t, unsigned count)
{
	uint8_t buf[INA_HDR_SIZE + sizeof(struct ina_wire_join)];
	struct ina_hdr h;

	for (unsigned i = 0; i < count; i++) {
		memset(&h, 0, sizeof(h));
		h.version = INA_WIRE_VERSION;
		h.type = INA_T_JOIN;
		h.encoding = INA_ENC_F32;
		h.job_id = 0x70000000u + (uint32_t)(ina_splitmix64(&t->rng) % 0x0fffffffu);
		h.block_size = 64;
		h.token = ina_splitmix64(&t->rng);
		ina_wire_encode_hdr(&h, buf);
		ina_wire_encode_join(2, 1, 64, buf + INA_HDR_SIZE);
		send_raw(t, buf, sizeof(buf));
	}
}

int
main(int argc, char **argv)
{
	struct target t = { .rng = 0x5eed };
	const char *secret = getenv("INA_JOB_TOKEN");
	unsigned count;
	char host[64];
	char *colon;
	struct ina_hdr h;

	if (argc != 4 || strlen(argv[1]) >= sizeof(host)) {
		fprintf(stderr, "usage: hostile ADDR:PORT JOB_ID COUNT\n");
		return 2;
	}
	strcpy(host, argv[1]);
	colon = strrchr(host, ':');
	if (!colon)
		return 2;
	*colon = '\0';
	t.sw.sin_family = AF_INET;
	t.sw.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &t.sw.sin_addr) != 1)
		return 2;
	t.job = (uint32_t)strtoul(argv[2], NULL, 0);
	count = (unsigned)strtoul(argv[3], NULL, 0);
	t.token = secret ? ina_token_hash(secret, strlen(secret)) : 0;
	t.fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (t.fd < 0) {
		perror("hostile: socket");
		return 1;
	}
	for (unsigned i = 0; i < count; i++) {
		/* The job's id with a guessed token: another job's worker. */
		h = data_hdr(t.job, t.token ^ (ina_splitmix64(&t.rng) | 1), 1);
		send_hdr(&t, &h, 64 * 4);
		/* A job id nobody holds. */
		h = data_hdr(t.job + 1000 + i, t.token, 1);
		send_hdr(&t, &h, 64 * 4);
		/* A header whose payload is missing, and less than a header. */
		send_hdr(&t, &h, 0);
		{
			uint8_t small[INA_HDR_SIZE - 1];

			memset(small, 0xab, sizeof(small));
			send_raw(&t, small, sizeof(small));
		}
		/* A payload longer than n_elems says. */
		h = data_hdr(t.job, t.token, 1);
		send_hdr(&t, &h, 64 * 4 + 100);
		/* A block past the tensor. */
		h = data_hdr(t.job, t.token, 1);
		h.block = 9;
		h.n_elems = 0;
		send_hdr(&t, &h, 0);
		/* An unknown version and an unknown type. */
		h = data_hdr(t.job, t.token, 1);
		h.version = 9;
		send_hdr(&t, &h, 64 * 4);
		h = data_hdr(t.job, t.token, 1);
		h.type = 42;
		send_hdr(&t, &h, 0);
		/* A replay of round 0's DATA, right token and epoch, from this
		 * socket: not the rank's bound address (wrong_address). */
		h = data_hdr(t.job, t.token, 0);
		send_hdr(&t, &h, 64 * 4);
		/* Sub-blocks, bad masks: sub-block 5 of 4; none; B 63 in 4. */
		send_sub(&t, 64, 0x21, 32, 0);
		send_sub(&t, 64, 0x00, 32, 0);
		send_sub(&t, 63, 0x01, 16, 0);
		/* Sub-blocks, short: 15 of sub-block 0's 16 values; half a mask. */
		send_sub(&t, 64, 0x01, 15, 0);
		send_sub(&t, 64, 0x01, 0, 2);
	}
	send_join_flood(&t, count);
	{
		/* Every answer this socket gets is to the JOIN flood (nothing
		 * else here draws one): the reflection ratio of an
		 * unauthenticated JOIN, bytes out over bytes in. */
		struct timeval tv = { .tv_sec = 0, .tv_usec = 300000 };
		uint8_t buf[PKT_MAX];
		size_t bytes = 0, largest = 0;
		unsigned answers = 0;
		ssize_t n;

		setsockopt(t.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while ((n = recv(t.fd, buf, sizeof(buf), 0)) > 0) {
			answers++;
			bytes += (size_t)n;
			if ((size_t)n > largest)
				largest = (size_t)n;
		}
		printf("hostile: join flood: %u JOINs of %zu bytes, %u answers, %zu bytes, "
		       "largest %zu, ratio %.3f\n",
		       count, INA_HDR_SIZE + sizeof(struct ina_wire_join), answers, bytes, largest,
		       (double)bytes /
			       ((double)count * (INA_HDR_SIZE + sizeof(struct ina_wire_join))));
	}
	close(t.fd);
	printf("hostile: sent %u packets to %s (job %u)\n", t.sent, argv[1], t.job);
	return 0;
}
