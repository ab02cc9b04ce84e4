/* SPDX-License-Identifier: MIT */
/*
 * A Promela model of bounded staleness, ssp:S (docs/PROTOCOL.md 6.7), as the
 * C code runs it: the workers' side of host/src/engine.c (ssp_allreduce,
 * ssp_build, ssp_on_result, the bound of engine_can_start) with the
 * training loop's residual (host/src/ssp_tensor.c, tests/unit/test_ssp.c),
 * and the switch's side, switch_sim/ssp.c (ssp_data, ssp_close,
 * ssp_finish), over a network that drops, duplicates, delays and reorders
 * packets. Run by tests/model/check.sh (ssp, ssp_liveness and the ssp
 * mutants); what it covers and the state counts are in docs/PROTOCOL.md
 * section 12.2.
 *
 * The instance: NW = 2 workers, one lane with one block (under ssp a lane's
 * round is one exchange, DATA then RESULT), S = 1 (SETS = S + 2 = 3 slot
 * sets), NR = 7 rounds: round 6 is the first to reuse a half (set 0's
 * round 0), so the hold of a result not every rank acknowledged is
 * reached. Worker w's gradient is w + 1 in every round; what it sends in
 * round r is its gradient plus its residual (sentv[]), and a result that
 * lacks it (PARTIAL without its bit) puts what it sent back into its
 * residual. Any worker may be slow at any time: nothing but the order of
 * steps is modelled.
 *
 * Safety (assertions): every result a worker accepts is the sum of what
 * the ranks its bitmap names sent in that round, complete results name
 * every rank, every worker accepts the same bits for a round, a block closed
 * early lacks only ranks that contributed to the round before; the switch
 * never receives a DATA of round k while a block of round k - S - 1 or
 * older is open (the staleness bound) and never sees a round two sets
 * ahead of an open block (ssp_ahead); at the end the results plus every
 * residual are every gradient (nothing lost, nothing counted twice).
 * Liveness (ltl 'finishes', weak fairness): every worker takes all NR
 * results.
 *
 * Time is not modelled. A round's retransmission timer fires when nothing of
 * that worker's round is in flight and no result to the worker waits in the
 * network (a host reads its receive queue before a timer fires); a resend
 * while the switch holds the worker's DATA in an open block (a slow peer)
 * happens at most MAXSLOW times. WAIT answers are not modelled (they only
 * restart a timer), nor JOIN, FIN, epochs, the peer timeout.
 */

#ifndef S
#define S 1
#endif
#define SETS (S + 2)	/* INA_SSP_SETS */
#define NW 2
#ifndef NR
#define NR 7		/* rounds; at most 8 (3 bits of round) */
#endif
#ifndef MAXDROP
#define MAXDROP 1
#endif
#ifndef MAXDUP
#define MAXDUP 1
#endif
#ifndef MAXSLOW
#define MAXSLOW 1
#endif
#ifndef BAGN
#define BAGN 8
#endif
#define FULL 3

#define T_DATA 1
#define T_RESULT 2

/*
 * A packet: type 2 bits, rank 1 (DATA: the sender; RESULT: the
 * destination), round 3, version bit 1, value 5 (DATA: what the worker
 * sends; RESULT: the sum), bitmap 2 (RESULT: the contributors), PARTIAL 1.
 */
#define MKPKT(t, rk, rd, v, val, bm, pa) \
	((t) | ((rk) << 2) | ((rd) << 3) | ((v) << 6) | ((val) << 7) | ((bm) << 12) | ((pa) << 14))
#define P_TYPE(p) ((p) & 3)
#define P_RANK(p) (((p) >> 2) & 1)
#define P_ROUND(p) (((p) >> 3) & 7)
#define P_VER(p) (((p) >> 6) & 1)
#define P_VAL(p) (((p) >> 7) & 31)
#define P_BM(p) (((p) >> 12) & 3)
#define P_PART(p) (((p) >> 14) & 1)

/* The network: a bag of packets kept sorted (0 = free), so that states that
 * differ only in the order packets were sent are one. */
short bag[BAGN];
byte drops, dups, slows;

/* The workers (engine.c ssp_*, the training loop's residual). */
byte w_next[NW];		/* the next round to start (engine 'round') */
byte w_got[NW];			/* results taken */
byte w_low[NW];			/* the oldest round whose result it lacks */
bit got[NW * 8];		/* worker w holds round r's result */
bit sent[NW * 8];		/* round r's DATA went out (need_send clear) */
byte sentv[NW * 8];		/* what worker w sent in round r */
bit wver[NW * SETS];		/* version bit per set (ssp_ver) */
byte residual[NW];

/* The switch: one lane, SETS slots of two halves (ssp.c). */
#define H_IDLE 0
#define H_AGG 1
#define H_RESULT 2
typedef half {
	unsigned state : 2;
	unsigned round : 3;
	unsigned bitmap : 2;
	unsigned acked : 2;
	unsigned val : 5;
	bit partial;
};
half sh[2 * SETS];
bit s_cur[SETS];
bit s_has_round[SETS];
byte s_last_round[SETS];

/* What the checks remember: the first result taken of each round, and which
 * rounds' blocks have closed at the switch. */
bit res_set[8];
byte res_val[8];
byte res_bm[8];
bit closed[8];

hidden byte i, k, q, x, y, fh;
hidden byte stale, deadin;
hidden short pk, po;

short out[2];
byte nout;

inline insert(p)
{
	assert(bag[BAGN - 1] == 0);	/* BAGN is enough */
	k = BAGN - 1;
	do
	:: k > 0 && (bag[k - 1] == 0 || bag[k - 1] > p) ->
		bag[k] = bag[k - 1];
		k--
	:: else -> break
	od;
	bag[k] = p;
	k = 0
}

inline emit(p)
{
	assert(nout < 2);
	out[nout] = p;
	nout++
}

/*
 * A packet whose arrival can change nothing is taken out (gc()): a RESULT
 * for a round its worker already holds (the engine drops it as stale), and
 * a DATA of a round whose result its sender already holds, once the
 * sender's acknowledgement it carries is in each half of its set that it
 * acknowledges (the result it may draw is stale; every block of round
 * r - S - 1 or older was closed when it was sent, so no later half needs
 * it). -DNOGC keeps them (check.sh ssp_nogc).
 */
#define ACKED(hh, w, r) (sh[hh].state != H_RESULT || sh[hh].round + S >= (r) || \
			 ((sh[hh].acked >> (w)) & 1))
#define DEAD(p) (got[P_RANK(p) * 8 + P_ROUND(p)] && \
		 (P_TYPE(p) == T_RESULT || \
		  (ACKED(2 * (P_ROUND(p) % SETS), P_RANK(p), P_ROUND(p)) && \
		   ACKED(2 * (P_ROUND(p) % SETS) + 1, P_RANK(p), P_ROUND(p)))))

inline gc()
{
#ifndef NOGC
	d_step {
		k = 0;
		do
		:: k < BAGN && bag[k] != 0 ->
			if
			:: DEAD(bag[k]) ->
				x = k;
				do
				:: x < BAGN - 1 -> bag[x] = bag[x + 1]; x++
				:: else -> break
				od;
				bag[BAGN - 1] = 0
			:: else -> k++
			fi
		:: else -> break
		od;
		k = 0;
		x = 0
	}
#else
	skip
#endif
}

/* The transport sends out[]: each packet may be lost or duplicated as it
 * is sent (delay and reordering are the receivers' choice in the bag). */
inline transmit()
{
	do
	:: nout > 0 ->
		nout--;
		if
		:: true -> d_step { insert(out[nout]); out[nout] = 0 }
		:: drops < MAXDROP -> drops++; out[nout] = 0
		:: dups < MAXDUP -> dups++;
			d_step { insert(out[nout]); insert(out[nout]); out[nout] = 0 }
		fi
	:: else -> break
	od;
	gc()
}

inline take(j)
{
	pk = bag[j];
	k = j;
	do
	:: k < BAGN - 1 -> bag[k] = bag[k + 1]; k++
	:: else -> break
	od;
	bag[BAGN - 1] = 0;
	k = 0
}

#define PICK(j, COND) \
	if \
	:: COND(0) -> j = 0 \
	:: COND(1) -> j = 1 \
	:: COND(2) -> j = 2 \
	:: COND(3) -> j = 3 \
	:: COND(4) -> j = 4 \
	:: COND(5) -> j = 5 \
	:: COND(6) -> j = 6 \
	:: COND(7) -> j = 7 \
	fi

#define TO_SWITCH(j) (P_TYPE(bag[j]) == T_DATA)
#define TO_WORKER(j) (P_TYPE(bag[j]) == T_RESULT && P_RANK(bag[j]) == me)

/* Something of worker w's round r in flight: its DATA, or a result to w. */
#define OF(j, w, r) (bag[j] != 0 && P_RANK(bag[j]) == (w) && \
		     (P_TYPE(bag[j]) == T_RESULT || P_ROUND(bag[j]) == (r)))
#define QUIET(w, r) (!OF(0, w, r) && !OF(1, w, r) && !OF(2, w, r) && !OF(3, w, r) && \
		     !OF(4, w, r) && !OF(5, w, r) && !OF(6, w, r) && !OF(7, w, r))
/* The switch holds w's DATA of round r in the open block: a resend now is a
 * slow peer's timeout. */
#define HELD(w, r) (sh[2 * ((r) % SETS) + wver[(w) * SETS + (r) % SETS]].state == H_AGG && \
		    sh[2 * ((r) % SETS) + wver[(w) * SETS + (r) % SETS]].round == (r) && \
		    ((sh[2 * ((r) % SETS) + wver[(w) * SETS + (r) % SETS]].bitmap >> (w)) & 1))
/* The switch would drop w's DATA of round r as ssp_hold: its half still
 * keeps a result of the set's older round that a rank has not acknowledged.
 * A resend now changes nothing but its acknowledgement, which the first
 * copy carried: counted as a slow peer's. */
#define HV(w, r) (2 * ((r) % SETS) + wver[(w) * SETS + (r) % SETS])
#define HOLDS(w, r) (s_cur[(r) % SETS] == wver[(w) * SETS + (r) % SETS] && \
		     sh[HV(w, r)].state == H_RESULT && sh[HV(w, r)].round != (r) && \
		     !(s_has_round[(r) % SETS] && (r) <= s_last_round[(r) % SETS]) && \
		     (sh[HV(w, r)].acked | (sh[HV(w, r)].round + S < (r) -> 1 << (w) : 0)) != FULL)
#define IN_FLIGHT(w, r) ((r) < w_next[w] && !got[(w) * 8 + (r)])
#define TIMER(w, r) (IN_FLIGHT(w, r) && sent[(w) * 8 + (r)] && QUIET(w, r) && \
		     (slows < MAXSLOW || !(HELD(w, r) || HOLDS(w, r))))

/* ssp_build(): worker w's DATA of round r, with the set's version bit */
inline send_data(w, r)
{
	po = MKPKT(T_DATA, w, r, wver[(w) * SETS + (r) % SETS], sentv[(w) * 8 + (r)], 0, 0);
	emit(po);
	po = 0;
	sent[(w) * 8 + (r)] = 1
}

/* ssp_on_result() and the training loop's take_results() */
inline on_result()
{
	q = P_ROUND(pk);
	y = me * 8 + q;
	stale = 0;
	if
	:: q < w_next[me] && !got[y] && sent[y] && P_VER(pk) == wver[me * SETS + q % SETS] ->
		printf("MSC: w%d takes round %d val %d bitmap %d\n", me, q, P_VAL(pk), P_BM(pk));
		/* a complete result names every rank; a PARTIAL one not all */
		assert(P_PART(pk) == (P_BM(pk) != FULL));
		assert(P_BM(pk) != 0);
		/* the sum of what the ranks it names sent in that round */
		assert(P_VAL(pk) == ((P_BM(pk) & 1) * sentv[q] + ((P_BM(pk) >> 1) & 1) * sentv[8 + q]));
		/* every worker takes the same bits */
		if
		:: res_set[q] -> assert(res_val[q] == P_VAL(pk) && res_bm[q] == P_BM(pk))
		:: else -> res_set[q] = 1; res_val[q] = P_VAL(pk); res_bm[q] = P_BM(pk)
		fi;
		if
		:: !((P_BM(pk) >> me) & 1) -> residual[me] = residual[me] + sentv[y]	/* missed */
		:: else
		fi;
		got[y] = 1;
		w_got[me]++;
		do
		:: w_low[me] < NR && got[me * 8 + w_low[me]] -> w_low[me]++
		:: else -> break
		od;
		wver[me * SETS + q % SETS] = 1 - wver[me * SETS + q % SETS]
	:: else -> stale = 1
	fi;
	y = 0;
	q = 0
}

#define TIMER_STEP(r) \
	:: atomic { \
		(r) < NR && TIMER(me, r) -> \
		d_step { slows = slows + (HELD(me, r) || HOLDS(me, r)); send_data(me, r); \
			 printf("MSC: w%d resends round %d\n", me, r) }; \
		transmit() \
	   }

proctype worker(byte me)
{
	do
	/* ina_allreduce(): the next round starts once every round S + 1 back
	 * and older is in (engine_can_start); it sends gradient + residual */
	:: atomic {
		w_next[me] < NR && w_next[me] <= w_low[me] + S ->
		d_step {
			y = me * 8 + w_next[me];
			sentv[y] = me + 1 + residual[me];
			printf("MSC: w%d starts round %d\n", me, w_next[me]);
			assert(sentv[y] < 32);
			residual[me] = 0;
			w_next[me]++;
			send_data(me, w_next[me] - 1);
			y = 0
		};
		transmit()
	   }
	/* engine_rx(): a result for me, in any order */
	:: atomic {
		PICK(i, TO_WORKER);
		d_step {
			take(i);
			i = 0;
			x = DEAD(pk);
			on_result();
			/* gc() takes out only results the worker drops as stale
			 * (checked with -DNOGC, where they arrive) */
			assert(!x || !got[me * 8 + P_ROUND(pk)] || stale);
			stale = 0;
			x = 0;
			pk = 0
		};
		transmit()
	   }
	/* ssp_tx(): a round's timer fires, its DATA is built again */
	TIMER_STEP(0)
	TIMER_STEP(1)
	TIMER_STEP(2)
	TIMER_STEP(3)
	TIMER_STEP(4)
	TIMER_STEP(5)
	TIMER_STEP(6)
	TIMER_STEP(7)
	:: w_got[me] == NR -> break
	od
}

/* ssp_finish() */
inline finish(kk, v)
{
	fh = 2 * kk + v;	/* 'v' may be s_cur[kk] itself */
	sh[fh].state = H_RESULT;
	s_cur[kk] = 1 - fh % 2;
	s_has_round[kk] = 1;
	s_last_round[kk] = sh[fh].round;
	closed[sh[fh].round] = 1;
	fh = 0
}

/* A result of half hh to both ranks (pl_result_route, INA_RANK_ALL) */
inline fan_out(hh)
{
	po = MKPKT(T_RESULT, 0, sh[hh].round, hh % 2, sh[hh].val, sh[hh].bitmap, sh[hh].partial);
	emit(po);
	po = po | (1 << 2);
	emit(po);
	po = 0
}

/* ssp_close(): a DATA of round r arrived: the first block of the lane open
 * in a round S or more behind closes, if every rank it lacks contributed to
 * the round before. 'x' = 1 when one closed. */
inline ssp_close(r)
{
	x = 0;
	i = 0;
	do
	:: i < SETS && x == 0 ->
		y = 2 * i + s_cur[i];
		if
		:: sh[y].state == H_AGG && r >= sh[y].round + S && sh[y].round > 0 ->
			/* round_half(round - 1) */
			k = (sh[y].round - 1) % SETS;
			if
			:: sh[2 * k].state != H_IDLE && sh[2 * k].round == sh[y].round - 1 -> k = 2 * k
			:: sh[2 * k + 1].state != H_IDLE && sh[2 * k + 1].round == sh[y].round - 1 ->
				k = 2 * k + 1
			:: else -> k = 255
			fi;
			if
			:: k != 255 && ((FULL & ~sh[y].bitmap) & ~sh[k].bitmap) == 0 ->
				sh[y].partial = 1;
				printf("MSC: sw closes round %d early, bitmap %d\n", sh[y].round, sh[y].bitmap);
				fan_out(y);
				finish(i, s_cur[i]);
				x = 1
			:: else
			fi;
			k = 0
		:: else
		fi;
		i++
	:: else -> break
	od;
	i = 0;
	y = 0
}

/* ssp_data() */
inline handle_data()
{
	q = P_ROUND(pk);
	printf("MSC: sw DATA rank %d round %d ver %d val %d\n", P_RANK(pk), q, P_VER(pk), P_VAL(pk));
	/* the staleness bound: no block of round q - S - 1 or older is open */
	x = 0;
	do
	:: x + S + 1 <= q -> assert(closed[x]); x++
	:: else -> break
	od;
	x = 0;
	/* round q acknowledges the set's results of rounds <= q - S - 1 */
	k = q % SETS;
	if
	:: sh[2 * k].state == H_RESULT && q > sh[2 * k].round + S ->
		sh[2 * k].acked = sh[2 * k].acked | (1 << P_RANK(pk))
	:: else
	fi;
	if
	:: sh[2 * k + 1].state == H_RESULT && q > sh[2 * k + 1].round + S ->
		sh[2 * k + 1].acked = sh[2 * k + 1].acked | (1 << P_RANK(pk))
	:: else
	fi;
	y = 2 * k + P_VER(pk);
	if
	:: sh[y].state == H_RESULT && sh[y].round == q ->
		/* a finished block: answered to its sender from the kept result */
		po = MKPKT(T_RESULT, P_RANK(pk), q, P_VER(pk), sh[y].val, sh[y].bitmap, sh[y].partial);
		emit(po);
		po = 0
	:: else ->
		if
		:: P_VER(pk) != s_cur[k] -> x = 2	/* no_match */
		:: P_VER(pk) == s_cur[k] && sh[y].state != H_AGG ->
			if
			:: s_has_round[k] && q <= s_last_round[k] -> x = 2	/* no_match */
			:: !(s_has_round[k] && q <= s_last_round[k]) && sh[y].state == H_RESULT &&
			   sh[y].acked != FULL -> x = 2;	/* ssp_hold */
				printf("MSC: sw holds: round %d acked %d\n", sh[y].round, sh[y].acked)
			:: else ->
				/* pl_half_open(): a half's round only goes forward */
				assert(sh[y].state == H_IDLE || q > sh[y].round);
				sh[y].state = H_AGG;
				sh[y].round = q;
				sh[y].bitmap = 0;
				sh[y].acked = 0;
				sh[y].val = 0;
				sh[y].partial = 0
			fi
		:: P_VER(pk) == s_cur[k] && sh[y].state == H_AGG && sh[y].round != q ->
			/* never a round two sets ahead of an open block (ssp_ahead) */
			assert(q < sh[y].round);
			x = 2	/* no_match */
		:: else
		fi;
		if
		:: x == 2 -> x = 0	/* dropped */
		:: else ->
			y = 2 * k + P_VER(pk);
			if
			:: (sh[y].bitmap >> P_RANK(pk)) & 1 ->
				/* a resend: it may close an older block */
				ssp_close(q)
			:: else ->
				sh[y].bitmap = sh[y].bitmap | (1 << P_RANK(pk));
				assert(sh[y].val + P_VAL(pk) < 32);
				sh[y].val = sh[y].val + P_VAL(pk);
				if
				:: sh[y].bitmap == FULL ->
					printf("MSC: sw completes round %d\n", sh[y].round);
					fan_out(y);
					finish(k, P_VER(pk))
				:: else -> ssp_close(q)
				fi
			fi
		fi
	fi;
	x = 0;
	y = 0;
	k = 0;
	q = 0
}

proctype sw()
{
end:	do
	:: atomic {
		PICK(i, TO_SWITCH);
		d_step {
			take(i);
			i = 0;
			deadin = DEAD(pk);
			handle_data();
			/* gc() takes out only DATA whose answer is stale and whose
			 * acknowledgement is in (checked with -DNOGC) */
			assert(!deadin || nout == 0 ||
			       (nout == 1 && P_TYPE(out[0]) == T_RESULT &&
				got[P_RANK(out[0]) * 8 + P_ROUND(out[0])]));
			deadin = 0;
			pk = 0
		};
		transmit()
	   }
	od
}

/* The end: every result plus every residual is every gradient. */
active proctype check_end()
{
	(w_got[0] == NR && w_got[1] == NR);
	d_step {
		x = 0;
		q = 0;
		do
		:: q < NR -> assert(res_set[q]); x = x + res_val[q]; q++
		:: else -> break
		od;
		assert(x + residual[0] + residual[1] == NR * 3);
		/* a block closed early lacks only ranks that were in the round
		 * before: no rank is left out twice in a row */
		q = 1;
		do
		:: q < NR -> assert(((FULL & ~res_bm[q]) & ~res_bm[q - 1]) == 0); q++
		:: else -> break
		od;
		x = 0;
		q = 0
	}
}

init
{
	atomic {
		run sw();
		run worker(0);
		run worker(1)
	}
}

ltl finishes { <> (w_got[0] == NR && w_got[1] == NR) }
