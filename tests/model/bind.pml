/* SPDX-License-Identifier: MIT */
/*
 * Bound addresses and the new-epoch re-JOIN (docs/PROTOCOL.md 5.1, 12.4),
 * checked with Spin by tests/model/check.sh (mode bind). One job of two
 * ranks, each at its own address, NROUNDS rounds of one block each; and an
 * attacker at a third address who has read a packet of the running job (its
 * token and epoch: token mode) and forges up to NFORGE packets once both
 * ranks have joined: DATA for either rank with a wrong value, FIN, LEAVE,
 * KEEPALIVE, or a JOIN as either rank from its own address. The network is
 * reliable here (lane.pml checks loss, duplicates and the lane protocol);
 * this model checks what the addresses decide:
 *   - every RESULT a worker takes is of its epoch and round and holds both
 *     ranks' own values, never a forged one (assert);
 *   - no worker is left waiting: each ends with all its rounds and its
 *     FIN_ACK, or with an ERROR that ends the run (no invalid end state).
 *     A forged FIN or LEAVE that counted, or a rank moved without telling
 *     the address it was bound to, leaves a worker waiting for ever.
 * What token mode does not stop is outside it: the attacker acts only after
 * both ranks joined (before that, a JOIN with the token takes a rank that
 * has not joined yet), and a re-JOIN ends the run (every rank hears LEFT):
 * it cannot change a sum or take a rank's results, but it can stop the job.
 */

#ifndef NFORGE
#define NFORGE 2
#endif
#define NROUNDS 2
#define ATT 2 /* the attacker's address; the ranks' are 0 and 1 */
#define FULL 3

mtype = { JOIN, JOIN_ACK, DATA, RESULT, FIN, FIN_ACK, LEAVE, KEEPALIVE, ERROR };

/* to the switch: type, source address, rank, epoch, round, value */
chan sw = [6] of { mtype, byte, byte, byte, byte, byte };
/* to an address: type, epoch, round, value */
chan to[3] = [4] of { mtype, byte, byte, byte };

/* The switch's job (one entry) and its epoch counter. */
bool running, aborted;
byte epoch_ctr, epoch;
byte joined, finished, have, acc, cur_round;
byte bound[2];
/* Ghost: worker r holds its JOIN_ACK (the attacker waits for both). */
bool acked[2];

/* A worker's queue never fills (asserted); the attacker's may: dropped. */
inline send(a, t, e, rd, v)
{
	assert(a == ATT || nfull(to[a]));
	if
	:: nfull(to[a]) -> to[a]!t, e, rd, v
	:: full(to[a]) -> skip
	fi
}

/* ERROR LEFT to every rank in 'who' at the address it is bound to. */
inline tell_left(who)
{
	if
	:: (who & 1) -> send(bound[0], ERROR, 0, 0, 0)
	:: else -> skip
	fi;
	if
	:: (who & 2) -> send(bound[1], ERROR, 0, 0, 0)
	:: else -> skip
	fi
}

/* A packet of the running epoch from a rank that joined it. */
#define OF_RUN (running && !aborted && e == epoch && ((joined >> r) & 1))

active proctype switch_()
{
	mtype t;
	byte src, r, e, rd, v;

end:
	do
	:: sw?t, src, r, e, rd, v ->
		if
		:: t == JOIN ->
			if
			:: !running ->
				/* admission: a new epoch */
				running = 1;
				aborted = 0;
				epoch_ctr++;
				epoch = epoch_ctr;
				joined = 0;
				finished = 0;
				have = 0;
				acc = 0;
				cur_round = 0;
				bound[r] = src;
				joined = joined | (1 << r);
				send(src, JOIN_ACK, epoch, 0, 0)
			:: running && (aborted || ((finished >> r) & 1)) ->
				skip /* join_while_lingering: its retry comes later */
			:: running && !aborted && !((finished >> r) & 1) && !((joined >> r) & 1) ->
				bound[r] = src;
				joined = joined | (1 << r);
				send(src, JOIN_ACK, epoch, 0, 0)
			:: running && !aborted && !((finished >> r) & 1) && ((joined >> r) & 1) &&
			   bound[r] == src ->
				send(src, JOIN_ACK, epoch, 0, 0) /* its ACK was lost */
			:: running && !aborted && !((finished >> r) & 1) && ((joined >> r) & 1) &&
			   bound[r] != src ->
				/* rebind(): the run ends, every rank in it told */
				aborted = 1;
				tell_left(joined & ~finished)
			fi
		:: t == DATA ->
			if
			:: !OF_RUN || ((finished >> r) & 1) -> skip
			:: else ->
				if
				:: bound[r] != src -> skip /* wrong_address (DATA) */
				:: else ->
					if
					:: rd == cur_round && !((have >> r) & 1) ->
						acc = acc + v;
						have = have | (1 << r);
						if
						:: have == FULL ->
							send(bound[0], RESULT, epoch, cur_round, acc);
							send(bound[1], RESULT, epoch, cur_round, acc);
							acc = 0;
							have = 0;
							cur_round++
						:: else -> skip
						fi
					:: else -> skip /* no_match, duplicates */
					fi
				fi
			fi
		:: t == FIN ->
			if
			:: !OF_RUN -> skip
			:: else ->
				if
				:: bound[r] != src -> skip /* wrong_address (FIN) */
				:: else ->
					finished = finished | (1 << r);
					send(src, FIN_ACK, epoch, 0, 0);
					if
					:: finished == FULL -> running = 0
					:: else -> skip
					fi
				fi
			fi
		:: t == LEAVE ->
			if
			:: !OF_RUN -> skip
			:: else ->
				if
				:: bound[r] != src -> skip /* wrong_address (LEAVE) */
				:: else ->
					tell_left(joined & ~finished & ~(1 << r));
					running = 0
				fi
			fi
		:: t == KEEPALIVE -> skip /* never answered, never ends a run */
		fi
	:: running && aborted -> running = 0 /* the next tick frees it */
	od
}

proctype worker(byte r)
{
	mtype t;
	byte e, te, trd, tv, rd;

	sw!JOIN, r, r, 0, 0, 0;
	to[r]?t, te, trd, tv;
	if
	:: t == JOIN_ACK -> e = te; acked[r] = 1
	:: t == ERROR -> goto stopped
	:: else -> assert(false)
	fi;
	do
	:: rd < NROUNDS ->
		sw!DATA, r, r, e, rd, r + 1;
		to[r]?t, te, trd, tv;
		if
		:: t == RESULT ->
			/* both ranks' own values, 1 + 2, of this epoch and round */
			assert(te == e && trd == rd && tv == 3);
			rd++
		:: t == ERROR -> goto stopped
		:: else -> assert(false)
		fi
	:: else -> break
	od;
	sw!FIN, r, r, e, 0, 0;
	to[r]?t, te, trd, tv;
	assert(t == FIN_ACK || t == ERROR);
stopped:
	skip
}

active proctype attacker()
{
	byte n, r;

	/* It has read a packet of the running job: its token and epoch. */
	(acked[0] && acked[1]);
	do
	:: n < NFORGE ->
		if
		:: r = 0
		:: r = 1
		fi;
		if
		:: sw!DATA, ATT, r, epoch, cur_round, 100
		:: sw!FIN, ATT, r, epoch, 0, 0
		:: sw!LEAVE, ATT, r, epoch, 0, 0
		:: sw!KEEPALIVE, ATT, r, epoch, 0, 0
		:: sw!JOIN, ATT, r, 0, 0, 0
		fi;
		n++
	:: break
	od
}

init
{
	atomic {
		run worker(0);
		run worker(1)
	}
}
