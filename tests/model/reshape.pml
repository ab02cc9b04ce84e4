/* SPDX-License-Identifier: MIT */
/*
 * A Promela model of the give-back of --share fair (docs/PROTOCOL.md 5.11,
 * "Give-back at a round boundary"): a job running on L = 2 lanes is told to
 * run on L' = 1 lane from round R, as the C code does it. The switch's side
 * is switch_sim/pipeline.c (give_back(): R = M + 2 from the highest DATA
 * round M seen; pl_put_result(): RESHAPE on every RESULT of a round >= R - 1,
 * fan-outs and shadow replies; process_one(): a DATA of round >= R validated
 * against L', an earlier one against L, 'moved' and reshape_done(), which
 * frees the slots of lanes L'..L-1), the lane protocol of handle_data() as in lane.pml;
 * the workers' side is host/src/engine.c (rx_one(): a RESULT flagged
 * RESHAPE for a later round arms it; engine_allreduce(): L' from round R
 * on; on_result(), build_data(), the lane timers), with the wire rules of
 * common/src/wire.c (validate_job(): lane < lanes, block and next in the
 * lane, a RESHAPE's status < lanes). Run by tests/model/check.sh (reshape,
 * reshape_liveness and the reshape mutants); what it covers and the state
 * counts are in docs/PROTOCOL.md section 12.3.
 *
 * The instance: NW = 2 workers, NB = 3 blocks dealt block mod L over the
 * lanes (lane 0: blocks 0, 2; lane 1: block 1; after the give-back lane 0
 * carries 0, 1, 2), NR = 4 rounds, f32 lane openers (block = lane); -DL3:
 * three lanes to two, five blocks (below). Every
 * block is non-zero for both workers (worker w sends w + 1), so next
 * pointers are block + L and there are no empty acks nor skips: lane.pml
 * checks those, and they do not touch the give-back. A new job's JOIN
 * arrives at any moment (a nondeterministic step of the switch, at most
 * once): the switch decides R = M + 2 (R = 1 before any DATA). R may be
 * past the last round: then nothing changes.
 *
 * Once every rank has sent a DATA of round >= R, the slots of lanes >= L'
 * are freed and taken by another job at once: their halves are poisoned,
 * and the model asserts that this job never reads or writes them again (a
 * late or duplicated packet of such a lane is refused by validation,
 * lane_past_lanes), and that no worker still runs on L lanes when it
 * happens.
 *
 * Safety (assertions): every result a worker accepts is the sum of both
 * workers' values for that round and block, of the worker's current round,
 * lane and block; no worker accepts a block twice; a round ends with every
 * block accounted for; the next pointer is never past the worker's own
 * (engine.c fails with INA_EPROTO); nothing touches the freed slot; no
 * worker runs on L lanes once it is freed; no invalid end state.
 * Liveness (ltl 'finishes', weak fairness): every worker finishes all NR
 * rounds.
 *
 * Time is not modelled. A lane's timer fires when nothing of that worker's
 * lane is in flight (no DATA from it on the lane, no RESULT to it on the
 * lane); a timeout while the switch holds the worker's DATA (a slow peer)
 * happens at most MAXSLOW times. WAIT answers to duplicates are not
 * modelled (a duplicate is dropped: a WAIT only restarts a timer and never
 * carries RESHAPE). Not modelled either: JOIN, FIN and linger (a lingering
 * job does not give back), epochs, the new job itself (only its taking the
 * freed slot), the --share-wait-ms timer, zero blocks and DEFERRED results,
 * i32 OPEN, more than one give-back.
 */

#define NW 2
#ifdef L3
/* -DL3: three lanes to two, five blocks (lane 0: 0, 3; lane 1: 1, 4;
 * lane 2: 2; from round R lane 0: 0, 2, 4 and lane 1: 1, 3), so that lane 1
 * keeps its slot while its blocks change, and validation against L'
 * refuses blocks that L accepted */
#define NL 3
#define NL2 2
#ifndef NB
#define NB 5		/* at most 7 (3 bits of block, END = NB) */
#endif
#define LB 2		/* bits of lane */
#define BB 3		/* bits of block */
#define PKT int
#else
#define NL 2		/* lanes asked and granted: L */
#define NL2 1		/* the lanes of the new share: L' */
#ifndef NB
#define NB 3		/* blocks; at most 3 (2 bits of block, END = NB) */
#endif
#define LB 1
#define BB 2
#define PKT short
#endif
#ifndef NR
#define NR 4		/* rounds; at most 4 (2 bits of round) */
#endif
#ifndef MAXDROP
#define MAXDROP 2
#endif
#ifndef MAXDUP
#define MAXDUP 1
#endif
#ifndef MAXSLOW
#define MAXSLOW 1
#endif
#ifndef BAGN
#define BAGN 8		/* 8 or 10 */
#endif
#define END NB			/* INA_BLOCK_END */
#define FULL 3
#define ALLBLK ((1 << NB) - 1)
#define SUMV 3			/* (0 + 1) + (1 + 1): both workers' values */

#define T_DATA 1
#define T_RESULT 2

/*
 * A packet (a short; an int with -DL3): type 2 bits, rank 1 (DATA: the
 * sender; RESULT: the destination), lane LB, round 2, block BB, next BB,
 * version bit 1, value 2 (DATA: the payload; RESULT: the sum), RESHAPE 1
 * (RESULT: the give-back, status = L', bound = the switch's s_R, which is
 * decided once).
 */
#define SH_ROUND (3 + LB)
#define SH_BLOCK (SH_ROUND + 2)
#define SH_NEXT (SH_BLOCK + BB)
#define SH_VER (SH_NEXT + BB)
#define MKPKT(t, rk, ln, rd, b, nx, v, val, rs) \
	((t) | ((rk) << 2) | ((ln) << 3) | ((rd) << SH_ROUND) | ((b) << SH_BLOCK) | \
	 ((nx) << SH_NEXT) | ((v) << SH_VER) | ((val) << (SH_VER + 1)) | ((rs) << (SH_VER + 3)))
#define P_TYPE(p) ((p) & 3)
#define P_RANK(p) (((p) >> 2) & 1)
#define P_LANE(p) (((p) >> 3) & ((1 << LB) - 1))
#define P_ROUND(p) (((p) >> SH_ROUND) & 3)
#define P_BLOCK(p) (((p) >> SH_BLOCK) & ((1 << BB) - 1))
#define P_NEXT(p) (((p) >> SH_NEXT) & ((1 << BB) - 1))
#define P_VER(p) (((p) >> SH_VER) & 1)
#define P_VAL(p) (((p) >> (SH_VER + 1)) & 3)
#define P_RS(p) (((p) >> (SH_VER + 3)) & 1)
#define KEY(r, b) ((r) * 8 + (b))

/* The network: a bag of packets kept sorted (0 = free). */
PKT bag[BAGN];
byte drops, dups, slows;

/* The workers (struct engine, struct lane of engine.c). */
byte e_round[NW];		/* 'round'; NR: every round done */
byte e_lanes[NW];		/* 'cfg.lanes' */
bit e_rs[NW];			/* 'reshape_lanes' != 0 ('reshape_round' = s_R) */
byte e_got[NW];			/* ghost: blocks of this round accounted for */
byte e_left[NW];		/* 'lanes_left' */
typedef lane {
	bit done;
	bit ver;
	unsigned block : BB;
};
lane ln[NW * NL];		/* lane l of worker w: ln[w * NL + l] */
/* every block is non-zero: the lane's next own block (ina_block_next_nonzero) */
#define MY_NEXT(w, b) ((b) + e_lanes[w] < NB -> (b) + e_lanes[w] : END)

/* The switch: one job, one slot per lane (struct job, struct slot, struct
 * half of pipeline.c). Half h of lane l is sh[2 * l + h]. */
#define H_IDLE 0
#define H_AGG 1
#define H_RESULT 2
#define H_POISON 3		/* the slot is another job's */
typedef half {
	unsigned state : 2;
	unsigned round : 2;
	unsigned block : BB;
	unsigned bitmap : 2;
	unsigned next : BB;
	unsigned acc : 2;
};
half sh[2 * NL];
bit s_cur[NL];
bit s_has_round[NL];
byte s_last_round[NL];
byte s_lanes = NL;		/* 'params.lanes' */
bit s_has_max;			/* 'has_max_round' */
byte s_max;			/* 'max_round' (0 once decided: nothing reads it) */
bit s_decided;			/* the new job's JOIN came (one give-back) */
bit s_pending;			/* 'reshape_lanes' != 0 */
byte s_R;			/* 'reshape_round' */
byte s_moved;			/* 'moved' */
bit s_freed;			/* the slots of lanes >= L' went back to the pool */

hidden byte i, k, b, x, y;
hidden PKT pk, po;
hidden byte dead, dropped;
hidden byte before;

#define NOUT NL		/* a step sends at most one packet per lane (an allreduce) */
PKT out[NOUT];
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
	assert(nout < NOUT);
	out[nout] = p;
	nout++
}

/* validate_job() at the switch: a DATA of round >= R is checked against L'
 * while the give-back is pending (process_one()), else against the job's
 * lanes. */
#define SW_LANES(p) ((s_pending && P_ROUND(p) >= s_R) -> NL2 : s_lanes)
#define IN_LANES(p, nl) (P_LANE(p) < (nl) && P_BLOCK(p) % (nl) == P_LANE(p) && \
			 (P_NEXT(p) == END || P_NEXT(p) % (nl) == P_LANE(p)))
#define SW_VALID(p) IN_LANES(p, SW_LANES(p))
/* ... and at the worker, against its lanes, with a RESHAPE's status (L') under them */
#define W_VALID(p, w) (IN_LANES(p, e_lanes[w]) && (!P_RS(p) || NL2 < e_lanes[w]))

/*
 * Dead packets (gc()): a DATA the switch refuses now and forever (lanes
 * only shrink), or for a key older than its half's, or a round its lane
 * finished (half keys and last_round only go forward: asserted); a RESULT
 * for a block its worker has passed, or one it refuses. Such a packet
 * changes nothing when it comes: the DATA draws no answer and moves
 * neither 'max_round' nor 'moved' (every rank sent that key), the RESULT's
 * RESHAPE is armed already or too late. -DNOGC keeps them and asserts it.
 */
#define HV(p) (2 * P_LANE(p) + P_VER(p))
#define S_PASSED(p) \
	(!SW_VALID(p) || \
	 (sh[HV(p)].state != H_IDLE && \
	  KEY(P_ROUND(p), P_BLOCK(p)) < KEY(sh[HV(p)].round, sh[HV(p)].block)) || \
	 (sh[HV(p)].state == H_IDLE && s_has_round[P_LANE(p)] && \
	  P_ROUND(p) <= s_last_round[P_LANE(p)]))
#define W_PASSED(w, p) \
	(e_round[w] == NR || !W_VALID(p, w) || P_ROUND(p) < e_round[w] || \
	 (P_ROUND(p) == e_round[w] && \
	  (ln[(w) * NL + P_LANE(p)].done || P_BLOCK(p) < ln[(w) * NL + P_LANE(p)].block)))
#define DEAD(p) ((P_TYPE(p) == T_DATA && S_PASSED(p)) || \
		 (P_TYPE(p) == T_RESULT && W_PASSED(P_RANK(p), p)))

inline gc()
{
	k = 0;
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
#endif
}

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
	PICK_X(j, COND) \
	fi
#if BAGN > 8
#define PICK_X(j, COND) :: COND(8) -> j = 8 :: COND(9) -> j = 9
#define QUIET_X(w, l) && !MINE(8, w, l) && !MINE(9, w, l)
#else
#define PICK_X(j, COND)
#define QUIET_X(w, l)
#endif

#define TO_SWITCH(j) (P_TYPE(bag[j]) == T_DATA)
#define TO_WORKER(j) (P_TYPE(bag[j]) == T_RESULT && P_RANK(bag[j]) == me)

#define MINE(j, w, l) (bag[j] != 0 && P_RANK(bag[j]) == (w) && P_LANE(bag[j]) == (l))
#define LANE_QUIET(w, l) (!MINE(0, w, l) && !MINE(1, w, l) && !MINE(2, w, l) && \
			  !MINE(3, w, l) && !MINE(4, w, l) && !MINE(5, w, l) && \
			  !MINE(6, w, l) && !MINE(7, w, l) QUIET_X(w, l))
/* the switch holds w's DATA of lane l's block: a timeout now is a slow peer's */
#define HELD(w, l) (!(s_freed && (l) >= NL2) && s_cur[l] == ln[(w) * NL + (l)].ver && \
		    sh[2 * (l) + s_cur[l]].state == H_AGG && \
		    sh[2 * (l) + s_cur[l]].round == e_round[w] && \
		    sh[2 * (l) + s_cur[l]].block == ln[(w) * NL + (l)].block && \
		    ((sh[2 * (l) + s_cur[l]].bitmap >> (w)) & 1))
#define TIMER(w, l) (e_round[w] < NR && (l) < e_lanes[w] && !ln[(w) * NL + (l)].done && \
		     LANE_QUIET(w, l) && (slows < MAXSLOW || !HELD(w, l)))

/* build_data(): every block has data */
inline send_data(w, l)
{
	po = MKPKT(T_DATA, w, l, e_round[w], ln[(w) * NL + (l)].block,
		   MY_NEXT(w, ln[(w) * NL + (l)].block), ln[(w) * NL + (l)].ver, (w) + 1, 0);
	emit(po);
	po = 0
}

/* engine_allreduce(): from the reshape round on, the new lanes; every lane
 * sends its opener (f32: block = lane). */
inline allreduce(w)
{
	if
	:: e_rs[w] && e_round[w] >= s_R ->
		printf("MSC: w%d runs on %d lanes from round %d\n", w, NL2, e_round[w]);
		e_lanes[w] = NL2;
		e_rs[w] = 0;
		/* the state of lanes >= L' is never used again */
		y = NL2;
		do
		:: y < NL ->
			ln[(w) * NL + y].done = 0;
			ln[(w) * NL + y].ver = 0;
			ln[(w) * NL + y].block = 0;
			y++
		:: else -> break
		od;
		y = 0
	:: else
	fi;
	e_got[w] = 0;
	e_left[w] = e_lanes[w];
	y = 0;
	do
	:: y < e_lanes[w] ->
		ln[(w) * NL + y].done = 0;
		ln[(w) * NL + y].block = y;
		send_data(w, y);
		y++
	:: else -> break
	od;
	y = 0
}

/* rx_one() and on_result(); 'pk' is a RESULT for 'me' */
inline on_result()
{
	if
	:: !W_VALID(pk, me) -> dropped = 1	/* bad (validate_job) */
	:: else ->
		/* RESHAPE: h.status lanes from h.bound, a later round */
		if
		:: P_RS(pk) && s_R > e_round[me] && NL2 < e_lanes[me] ->
			e_rs[me] = 1	/* reshape_lanes */
		:: else
		fi;
		y = me * NL + P_LANE(pk);
		if
		:: e_round[me] == NR || ln[y].done || P_ROUND(pk) != e_round[me] ||
		   P_BLOCK(pk) != ln[y].block || P_VER(pk) != ln[y].ver ->
			dropped = 1	/* stale */
		:: else ->
			b = P_BLOCK(pk);
			printf("MSC: w%d takes round %d lane %d block %d next %d rs %d\n",
			       me, e_round[me], P_LANE(pk), b, P_NEXT(pk), P_RS(pk));
			/* on_result() fails with INA_EPROTO past my next */
			assert(P_NEXT(pk) <= MY_NEXT(me, b));
			/* the sum of both workers' values, never a block twice */
			assert(P_VAL(pk) == SUMV);
			assert(!((e_got[me] >> b) & 1));
			e_got[me] = e_got[me] | (1 << b);
			/* every block non-zero: nothing to skip */
			assert(P_NEXT(pk) == MY_NEXT(me, b));
			ln[y].ver = 1 - ln[y].ver;
			if
			:: P_NEXT(pk) == END ->
				ln[y].done = 1;
				e_left[me]--;
				if
				:: e_left[me] == 0 ->
					/* finish_op(): every block accounted for */
					assert(e_got[me] == ALLBLK);
					e_round[me]++;
					if
					:: e_round[me] < NR -> allreduce(me)
					:: else ->
						printf("MSC: w%d done\n", me);
						e_got[me] = 0
					fi
				:: else
				fi
			:: else ->
				ln[y].block = P_NEXT(pk);
				send_data(me, P_LANE(pk))
			fi
		fi
	fi;
	b = 0;
	y = 0
}

#define TIMER_STEP(l) \
	:: atomic { \
		TIMER(me, l) -> \
		d_step { slows = slows + HELD(me, l); send_data(me, l); \
			 printf("MSC: w%d resends lane %d\n", me, l) }; \
		transmit() \
	   }

proctype worker(byte me)
{
	do
	:: atomic {
		PICK(i, TO_WORKER);
		d_step {
			take(i);
			i = 0;
			dead = DEAD(pk);
			before = e_rs[me];
			on_result();
			/* gc() takes out only results that are refused or stale and
			 * whose RESHAPE changes nothing (checked with -DNOGC) */
			assert(!dead || (dropped && e_rs[me] == before));
			dead = 0;
			dropped = 0;
			before = 0;
			pk = 0
		};
		transmit()
	   }
	TIMER_STEP(0)
	TIMER_STEP(1)
#if NL > 2
	TIMER_STEP(2)
#endif
	:: e_round[me] == NR -> break
	od
}

inline half_open(hh, r, blk)
{
	/* a half's key never goes back (gc() relies on it) */
	assert(KEY(r, blk) >= KEY(sh[hh].round, sh[hh].block));
	sh[hh].state = H_AGG;
	sh[hh].round = r;
	sh[hh].block = blk;
	sh[hh].bitmap = 0;
	sh[hh].next = END;
	sh[hh].acc = 0
}

/* pl_put_result(): the result kept in half 'hh' (lane 'l') to rank 'w';
 * RESHAPE on rounds >= R - 1 while the give-back is pending */
#define MARKED(hh) (s_pending && sh[hh].round + 1 >= s_R)
#define RESULT_PKT(w, l, hh, rs) \
	MKPKT(T_RESULT, w, l, sh[hh].round, sh[hh].block, sh[hh].next, (hh) % 2, sh[hh].acc, rs)

/* reshape_done(): the slots of lanes >= L' go back to the pool, and
 * another job takes them at once */
inline reshape_done()
{
	printf("MSC: sw frees lanes %d.. (round %d)\n", NL2, s_R);
	/* no worker needs it: each runs on L' (or is done) */
	assert((e_round[0] == NR || e_lanes[0] == NL2) && (e_round[1] == NR || e_lanes[1] == NL2));
	s_freed = 1;
	s_lanes = NL2;
	s_pending = 0;
	s_moved = 0;
	x = 2 * NL2;
	do
	:: x < 2 * NL ->
		sh[x].state = H_POISON;
		sh[x].round = 0;
		sh[x].block = 0;
		sh[x].bitmap = 0;
		sh[x].next = 0;
		sh[x].acc = 0;
		s_cur[x / 2] = 0;
		s_has_round[x / 2] = 0;
		s_last_round[x / 2] = 0;
		x++
	:: else -> break
	od;
	x = 0
}

/* process_one() after validation: 'max_round', 'moved' */
inline track()
{
	if
	:: !s_decided && (!s_has_max || P_ROUND(pk) > s_max) -> s_max = P_ROUND(pk); s_has_max = 1
	:: else
	fi;
	if
	:: s_pending && P_ROUND(pk) >= s_R ->
		s_moved = s_moved | (1 << P_RANK(pk));
		if
		:: s_moved == FULL -> reshape_done()
		:: else
		fi
	:: else
	fi
}

/* handle_data(); 'pk' is a valid DATA of the job */
inline handle_data()
{
	b = P_LANE(pk);
	y = 2 * b + P_VER(pk);
	/* this job never reads nor writes a slot it gave back */
	assert(!(s_freed && b >= NL2) && sh[y].state != H_POISON && sh[y + 1 - 2 * (y % 2)].state != H_POISON);
	if
	:: P_VER(pk) != s_cur[b] ->
		if
		:: sh[y].state == H_RESULT && sh[y].round == P_ROUND(pk) &&
		   sh[y].block == P_BLOCK(pk) ->
			po = RESULT_PKT(P_RANK(pk), b, y, MARKED(y));
			emit(po)	/* shadow_replies */
		:: else -> dropped = 1	/* no_match */
		fi
	:: else ->
		x = 1;
		if
		:: sh[y].state == H_IDLE ->
			if
			:: P_BLOCK(pk) != b ||
			   (s_has_round[b] && P_ROUND(pk) <= s_last_round[b]) ->
				x = 0; dropped = 1	/* no_match */
			:: else -> half_open(y, P_ROUND(pk), P_BLOCK(pk))
			fi
		:: sh[y].state != H_IDLE &&
		   (sh[y].round != P_ROUND(pk) || sh[y].block != P_BLOCK(pk)) ->
			x = 0; dropped = 1	/* no_match */
		:: else
		fi;
		if
		:: x == 0
		:: x && ((sh[y].bitmap >> P_RANK(pk)) & 1) ->
			dropped = 2	/* a duplicate: WAIT, not modelled */
		:: else ->
			sh[y].bitmap = sh[y].bitmap | (1 << P_RANK(pk));
			sh[y].acc = sh[y].acc + P_VAL(pk);
			if
			:: P_NEXT(pk) < sh[y].next -> sh[y].next = P_NEXT(pk)
			:: else
			fi;
			if
			:: sh[y].bitmap == FULL ->
				printf("MSC: sw completes lane %d round %d block %d rs %d\n",
				       b, sh[y].round, sh[y].block, MARKED(y));
				sh[y].state = H_RESULT;
				po = RESULT_PKT(0, b, y, MARKED(y));
				emit(po);	/* first send */
				po = RESULT_PKT(1, b, y, MARKED(y));
				emit(po);
				po = 0;
				s_cur[b] = 1 - P_VER(pk);
				if
				:: sh[y].next == END ->
					sh[2 * b + s_cur[b]].state = H_IDLE;
					assert(!s_has_round[b] || P_ROUND(pk) > s_last_round[b]);
					s_has_round[b] = 1;
					s_last_round[b] = P_ROUND(pk)
				:: else ->
					half_open(2 * b + s_cur[b], P_ROUND(pk), sh[y].next)
				fi
			:: else
			fi
		fi
	fi;
	x = 0;
	b = 0;
	y = 0
}

proctype sw()
{
end:	do
	:: atomic {
		PICK(i, TO_SWITCH);
		d_step {
			take(i);
			i = 0;
			dead = DEAD(pk);
			before = s_max + 4 * s_has_max + 8 * s_moved;
			printf("MSC: sw DATA rank %d lane %d round %d block %d next %d\n",
			       P_RANK(pk), P_LANE(pk), P_ROUND(pk), P_BLOCK(pk), P_NEXT(pk));
			if
			:: !SW_VALID(pk) -> dropped = 1	/* drop_wire: lane_past_lanes, ... */
			:: else ->
				track();
				handle_data()
			fi;
			/* gc() takes out only DATA that is dropped and moves
			 * nothing (checked with -DNOGC) */
			assert(!dead || (dropped && before == s_max + 4 * s_has_max + 8 * s_moved));
			dead = 0;
			dropped = 0;
			before = 0;
			pk = 0
		};
		transmit()
	   }
	/* a new job's JOIN finds less than its share free: give_back() */
	:: atomic {
		!s_decided ->
		s_decided = 1;
		s_pending = 1;
		if
		:: s_has_max -> s_R = s_max + 2
		:: else -> s_R = 1
		fi;
		printf("MSC: sw runs the job on %d lanes from round %d\n", NL2, s_R);
		s_max = 0;
		s_has_max = 0;
		gc()
	   }
	od
}

init
{
	atomic {
		assert(NB >= NL && NB < (1 << BB) && NR <= 4 && (BAGN == 8 || BAGN == 10));
		e_lanes[0] = NL;
		e_lanes[1] = NL;
		allreduce(0);
		transmit();
		allreduce(1);
		transmit();
		run sw();
		run worker(0);
		run worker(1)
	}
}

ltl finishes { <> (e_round[0] == NR && e_round[1] == NR) }
