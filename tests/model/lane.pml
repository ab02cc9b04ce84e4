/* SPDX-License-Identifier: MIT */
/*
 * A Promela model of ina's lane protocol as the C code runs it today
 * (docs/PROTOCOL.md sections 5.2 and 6, and 7.7): workers (host/src/engine.c),
 * the switch (switch_sim/pipeline.c) and a network that drops, duplicates,
 * delays and reorders packets. Run by tests/model/check.sh; what it covers,
 * what it bounds and the state counts are in docs/PROTOCOL.md section 12.
 *
 * The instance: NW = 2 workers, NB = 4 blocks, NR = 2 rounds, NL = 1 lane
 * (2 with -DNL=2), f32 lane openers (block = lane; -DI32: i32's OPEN), one
 * job already admitted
 * (every rank joined, one epoch), one tensor and one block size. Worker w's
 * element in block b of round r is w + 1 when b is in the worker's support
 * for that round and 0 otherwise, so a sum names who contributed (1, 2 or 3)
 * and a sum under the result filter's bound (BOUND = 2: only worker 0 had
 * the block) goes down DEFERRED. Each worker's support for each round is
 * chosen at the start among NPAT patterns (all 16 subsets with -DNPAT=16).
 *
 * Time is not modelled. A worker's retransmission timer fires at any moment
 * at which nothing of that worker's lane is in flight (no DATA from it, no
 * RESULT or WAIT to it): a timer that fires earlier than that is the
 * network's duplicate, which the network can make of any packet. A timeout
 * while the switch already holds the worker's packet (a slow peer) happens
 * at most MAXSLOW times in a run. Linger expiry is allowed once no worker is
 * inside an allreduce (the timing argument is in docs/PROTOCOL.md section
 * 12). Packets that can no longer change anything are taken out (gc();
 * -DNOGC keeps them and checks that each is dropped when it arrives).
 *
 * Safety (assertions): every result a worker accepts is the right sum of
 * that round and block, or header-only exactly when the sum is zero, or
 * DEFERRED exactly when the sum is under the bound; the next pointer is the
 * smallest next non-zero block of any worker; the blocks it skips are zero
 * for everybody; no worker accepts two results for one block; a round ends
 * with every block accounted for; a WAIT names only ranks that are missing;
 * the network never holds more than BAGN packets. Liveness (the ltl claim
 * 'closes', checked with weak fairness): every worker closes after all NR
 * rounds.
 *
 * -DFAILOVER adds the replica switch and failover (docs/PROTOCOL.md, "Replica
 * and failover"; what is modelled: section 12.1): the switch above is the primary P, which
 * sends every result (fan-out or shadow reply) as one REPL to the replica R
 * (rsw()); R stores it as the lane's last result if newer and sends it on as
 * RESULT. P may crash once, at any step. A worker that then hears nothing
 * sends FAILOVER to R; R takes over under epoch E + 1 from its stored results
 * (shadow = the result, open block = its next), announces it to every rank,
 * and the workers switch and resend their in-flight DATA; packets of the old
 * epoch are refused on both sides. FIN goes to R too while it stands by. The
 * same assertions then say that no sum is lost or counted twice across the
 * failover, and no worker accepts a block twice (so never from two epochs).
 * One lane only; the default instance is smaller (check.sh FO).
 */

#ifndef NW
#define NW 2		/* workers; the packet layout below has 1 bit of rank */
#endif
#ifndef NB
#define NB 4		/* blocks of the tensor */
#endif
#ifndef NR
#define NR 2		/* rounds (allreduce calls) */
#endif
#ifndef NL
#define NL 1		/* lanes */
#endif
#ifndef MAXDROP
#define MAXDROP 2	/* packets the network may lose */
#endif
#ifndef MAXDUP
#define MAXDUP 1	/* packets the network may duplicate */
#endif
#ifndef BAGN
#define BAGN 8		/* packets in flight at once */
#endif
#ifndef MAXSLOW
#define MAXSLOW 2	/* timeouts while the switch holds the packet (slow peer) */
#endif
#ifndef NPAT
#define NPAT 4		/* support patterns per worker and round */
#endif
#define BOUND 2		/* every worker's result-filter bound (DATA 'bound') */
#define BOUND_NONE 7	/* half_open()'s UINT32_MAX: no bound announced yet */
#define END NB		/* INA_BLOCK_END */
#define FULL ((1 << NW) - 1)	/* struct job 'full' */
#define ALLBLK ((1 << NB) - 1)

/* Packet types (docs/PROTOCOL.md 2.3); 0 is a free place in the bag. */
#define T_DATA 1
#define T_RESULT 2
#define T_WAIT 3
#define T_FIN 4
#define T_FINACK 5
#ifdef FAILOVER
#define T_REPL 6	/* INA_T_REPL: primary -> replica */
#define T_FAILOVER 7	/* INA_T_FAILOVER: worker -> replica (epoch E), replica -> worker (E + 1) */
#endif

/*
 * The i32 encoding (-DI32) opens each lane with a header-only OPEN packet
 * (ina_lane_first()), whose RESULT announces the lane's first block; its
 * exponents are not modelled. OPEN comes before every block: ORD() orders
 * block indices, KEY() the keys (round, block) of a lane.
 */
#define OPEN 5		/* INA_BLOCK_OPEN */
#ifdef I32
#define FIRST(l) OPEN
#define BB 3		/* bits of a block field */
#define PKT int
#else
#define FIRST(l) (l)
#define BB 2
#ifdef FAILOVER
#define PKT int
#else
#define PKT short
#endif
#endif
#define ORD(b) (((b) + 1) % (OPEN + 1))
#define KEY(r, b) ((r) * 8 + ORD(b))

/*
 * A packet is a short (an int with -DI32): type 3 bits, rank 1 (the sender
 * of DATA and FIN, the destination of RESULT, WAIT and FIN_ACK), lane 1,
 * round 1, block BB, next 3, version bit 1, value 2 (DATA: the payload, 0 for
 * an empty packet; RESULT: the sum, 0 for header-only; WAIT: the bitmap of
 * missing ranks), DEFERRED flag 1. Values are positive, so "has a payload"
 * is "value > 0".
 */
#define MKPKT(t, rk, ln, rd, b, nx, v, val, df) \
	((t) | ((rk) << 3) | ((ln) << 4) | ((rd) << 5) | ((b) << 6) | ((nx) << (6 + BB)) | \
	 ((v) << (9 + BB)) | ((val) << (10 + BB)) | ((df) << (12 + BB)))
#define P_TYPE(p) ((p) & 7)
#define P_RANK(p) (((p) >> 3) & 1)
#define P_LANE(p) (((p) >> 4) & 1)
#define P_ROUND(p) (((p) >> 5) & 1)
#define P_BLOCK(p) (((p) >> 6) & ((1 << BB) - 1))
#define P_NEXT(p) (((p) >> (6 + BB)) & 7)
#define P_VER(p) (((p) >> (9 + BB)) & 1)
#define P_VAL(p) (((p) >> (10 + BB)) & 3)
#define P_DEF(p) (((p) >> (12 + BB)) & 1)
#ifdef FAILOVER
/*
 * With -DFAILOVER a packet (an int) also has: the epoch bit (16; 0 = the
 * primary's epoch E, 1 = the replica's E + 1), the replica bit (17; the
 * packet is to or from the replica R, else to or from the primary P) and the
 * all bit (18; a REPL whose rank is INA_RANK_ALL, a fan-out).
 */
#define XB(ep, atr) (((ep) << 16) | ((atr) << 17))
#define ALLBIT (1 << 18)
#define P_EP(p) (((p) >> 16) & 1)
#define P_ATR(p) (((p) >> 17) & 1)
#define P_ALL(p) (((p) >> 18) & 1)
#endif

/* The network: a multiset of packets in flight, kept sorted (ascending, the
 * free places last) so that one multiset is one state. */
PKT bag[BAGN];
byte drops, dups, slows;

/* The inputs: bit b of sup[w * NR + r] is set when worker w's block b of
 * round r is non-zero. */
byte sup[NW * NR];
#define IN(w, r, b) (((sup[(w) * NR + (r)] >> (b)) & 1) * ((w) + 1))
#define SUM(r, b) (IN(0, r, b) + IN(1, r, b))

/* The switch: one job, one slot per lane (struct job, struct slot, struct
 * half of pipeline.c). Half h of lane l is sh[2 * l + h]. */
#define H_IDLE 0
#define H_AGG 1
#define H_RESULT 2
bit job_active = 1;		/* struct job 'active' */
byte job_finished;		/* struct job 'finished' */
bit job_linger;			/* struct job 'linger_until' != 0 */
bit s_cur[NL];			/* struct slot 'cur' */
bit s_has_round[NL];
bit s_last_round[NL];
typedef half {
	unsigned state : 2;	/* state */
	unsigned round : 1;	/* key.round */
	unsigned block : 3;	/* key.block */
	unsigned bitmap : 2;	/* bitmap */
	unsigned next : 3;	/* next */
	unsigned acc : 2;	/* acc (the sum) */
	unsigned bound : 3;	/* bound */
	bit has_data;
	bit deferred;
};
half sh[2 * NL];

/* The workers (struct engine and struct lane of engine.c). Lane l of
 * worker w is ln[w * NL + l]. */
#define E_RUNNING 1
#define E_READY 2
#define E_FINISHING 3
#define E_CLOSED 4
byte e_phase[NW];		/* 'phase' */
byte e_round[NW];		/* 'round' */
byte e_lanes_left[NW];		/* 'lanes_left' */
byte e_tries[NW];		/* 'ctl_tries' of the FIN */
byte e_got[NW];			/* ghost: blocks of this round accounted for */
typedef lane {
	bit done;		/* struct lane 'done' */
	bit ver;		/* 'ver' */
	bit has_data;		/* 'has_data' */
	unsigned block : 3;	/* 'block' */
	unsigned my_next : 3;	/* 'my_next' */
};
lane ln[NW * NL];

#ifdef FAILOVER
/*
 * The replica (pipeline.c in standby mode, docs/PROTOCOL.md 12.1) and the
 * primary's crash. While P is alive, the switch state above (sh, s_cur,
 * s_has_round, s_last_round, job_*) is P's. P crashes at most once, at any
 * step: its state is wiped. R stands by with its own job (r_active,
 * r_finished, r_linger) and each lane's last stored result (r_store, a
 * RESULT packet, 0 = none); when it takes over (epoch E + 1) it restores the
 * switch state above from r_store and from then on the state is R's, run by
 * the same handle_data() and FIN code. Workers fail over only once P is dead
 * (a false suspicion, P alive while R takes over, is not modelled).
 */
bit p_alive = 1;		/* P has not crashed */
bit r_active = 1;		/* R's standby job exists (not freed) */
bit r_taken;			/* R has taken the job over (epoch E + 1) */
byte r_finished;		/* R's standby job: ranks that sent FIN */
bit r_linger;			/* R's standby job lingers */
PKT r_store[NL];		/* the lane's last result R stored (its shadow) */
bit e_sw[NW];			/* the worker switched to R (epoch E + 1) */
#endif

/* Scratch, not part of the state: every atomic step sets what it reads. */
hidden byte i, k, b, x, y;
hidden PKT pk, q;
hidden byte z;
hidden byte dead, dropped;	/* the packet was dead (gc()); it was dropped */

/* Puts packet 'p' into the bag, in its place. */
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

/* A step's packets out (pipeline_rx_burst()'s out[], engine_tx()'s out[]):
 * a step runs as one d_step and queues them here; transmit() sends them.
 * Not hidden: they live across transmit()'s choices, which the search
 * undoes, and they are empty in every state it stores. */
PKT out[2];
byte nout;

inline emit(p)
{
	assert(nout < 2);
	out[nout] = p;
	nout++
}

/*
 * A packet whose arrival can change nothing, now or later, is taken out of
 * the bag: a RESULT or WAIT for a block its worker has passed (a worker's
 * round and lane block only go forward), a FIN_ACK for a closed worker, a
 * FIN or DATA for a freed job, a DATA from a finished rank or for a key
 * older than its half's (half keys and last_round only go forward: asserted
 * in half_open() and on completion). Its receiver would drop it (counted as
 * stale or no_match) whenever it came; taking it out early only lets its
 * owner's timer fire sooner, which real timers do anyway. It keeps the
 * search from telling apart states that differ only in such dead packets.
 */
#define W_PASSED(w, p) \
	(e_phase[w] == E_CLOSED || (e_phase[w] == E_RUNNING && \
	 (P_ROUND(p) < e_round[w] || (P_ROUND(p) == e_round[w] && \
	  (ln[(w) * NL + P_LANE(p)].done || \
	   ORD(P_BLOCK(p)) < ORD(ln[(w) * NL + P_LANE(p)].block))))) || \
	 (e_phase[w] == E_FINISHING && P_TYPE(p) != T_FINACK))
#define HV(p) (2 * P_LANE(p) + P_VER(p))
#define S_PASSED(p) \
	(!job_active || (P_TYPE(p) == T_DATA && \
	 (((job_finished >> P_RANK(p)) & 1) || \
	  (sh[HV(p)].state != H_IDLE && \
	    KEY(P_ROUND(p), P_BLOCK(p)) < KEY(sh[HV(p)].round, sh[HV(p)].block)) || \
	   (sh[HV(p)].state == H_IDLE && s_has_round[P_LANE(p)] && \
	    P_ROUND(p) <= s_last_round[P_LANE(p)]))))
#ifndef FAILOVER
#define TO_SW(p) (P_TYPE(p) == T_DATA || P_TYPE(p) == T_FIN)
#define DEAD(p) ((TO_SW(p) && S_PASSED(p)) || (!TO_SW(p) && W_PASSED(P_RANK(p), p)))
#else
/* With -DFAILOVER also: anything for a crashed P; a REPL once R's standby
 * job is freed or taken over; a FAILOVER request or a FIN for a job R no
 * longer has, an old-epoch FIN after the takeover; an old-epoch RESULT,
 * WAIT or FIN_ACK for a worker that switched to R; an announcement for a
 * worker that switched already or closed. */
#define TO_SW(p) (P_TYPE(p) == T_DATA || P_TYPE(p) == T_FIN || P_TYPE(p) == T_REPL || \
		  (P_TYPE(p) == T_FAILOVER && !P_EP(p)))
#define R_DEAD(p) \
	((P_TYPE(p) == T_REPL && (!r_active || r_taken)) || \
	 (P_TYPE(p) == T_FAILOVER && ((!r_taken && !r_active) || (r_taken && !job_active))) || \
	 (P_TYPE(p) == T_FIN && ((!r_taken && !r_active) || \
				 (r_taken && (!job_active || !P_EP(p))))) || \
	 (P_TYPE(p) == T_DATA && (!r_taken || S_PASSED(p))))
#define W_DEAD(p) \
	((P_TYPE(p) == T_FAILOVER && (e_phase[P_RANK(p)] == E_CLOSED || e_sw[P_RANK(p)])) || \
	 (P_TYPE(p) != T_FAILOVER && \
	  (W_PASSED(P_RANK(p), p) || (e_sw[P_RANK(p)] && !P_EP(p)))))
#define DEAD(p) \
	((TO_SW(p) && ((P_ATR(p) && R_DEAD(p)) || (!P_ATR(p) && (!p_alive || S_PASSED(p))))) || \
	 (!TO_SW(p) && W_DEAD(p)))
#endif

inline gc()
{
	k = 0;	/* not a d_step's first statement: a jump may end here */
#ifndef NOGC
	d_step {
		k = 0;
		do
		:: k < BAGN && bag[k] != 0 ->
			if
			:: DEAD(bag[k]) ->
				pk = k;
				do
				:: pk < BAGN - 1 -> bag[pk] = bag[pk + 1]; pk++
				:: else -> break
				od;
				bag[BAGN - 1] = 0
			:: else -> k++
			fi
		:: else -> break
		od;
		k = 0;
		pk = 0
	}
#endif
}

/*
 * The transport sends out[]. Unless the network is a process of its own
 * (-DNET_PROCESS), each packet may be lost (MAXDROP in all) or duplicated
 * (MAXDUP in all) here, as it is sent: a packet that is lost or copied later
 * is one that was lost or copied now and then delayed, and delay and
 * reordering are the receivers' choice of any packet in the bag (PICK).
 */
inline transmit()
{
	do
	:: nout > 0 ->
		nout--;
#ifdef NET_PROCESS
		d_step { insert(out[nout]); out[nout] = 0 }
#else
		if
		:: true -> d_step { insert(out[nout]); out[nout] = 0 }
		:: drops < MAXDROP -> drops++; out[nout] = 0	/* lost */
		:: dups < MAXDUP -> dups++;			/* duplicated */
			d_step { insert(out[nout]); insert(out[nout]); out[nout] = 0 }
		fi
#endif
	:: else -> break
	od;
	gc()
}

/* Takes the packet at place 'j' out of the bag into 'pk'. */
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

/* Chooses a place 'j' in the bag whose packet satisfies COND(place). */
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

/* The packets for the switch, for worker me, and those the network process
 * (-DNET_PROCESS) may still lose or copy. */
#ifndef FAILOVER
#define TO_SWITCH(j) (P_TYPE(bag[j]) == T_DATA || P_TYPE(bag[j]) == T_FIN)
#define FOR_P(j) TO_SWITCH(j)
#else
#define TO_SWITCH(j) (bag[j] != 0 && TO_SW(bag[j]))
#define FOR_P(j) (TO_SWITCH(j) && !P_ATR(bag[j]))
#define FOR_R(j) (TO_SWITCH(j) && P_ATR(bag[j]))
#endif
#define TO_WORKER(j) (e_phase[me] != E_CLOSED && bag[j] != 0 && !TO_SWITCH(j) && \
		      P_RANK(bag[j]) == me)
#define DROPPABLE(j) (drops < MAXDROP && bag[j] != 0)
#define DUPLICABLE(j) (dups < MAXDUP && bag[j] != 0)

/* 1 when nothing of worker 'w' lane 'l' is in flight: the lane's timer may
 * fire. Packets of a lane are DATA from w and RESULT and WAIT to w. */
#ifndef FAILOVER
#define MINE(j, w, l) (bag[j] != 0 && P_RANK(bag[j]) == (w) && P_LANE(bag[j]) == (l) && \
		       P_TYPE(bag[j]) <= T_WAIT)
#else
/* also a REPL on its way to w (or to every rank), and w's FAILOVER request
 * or the announcement to w (one lane: they have lane 0) */
#define MINE(j, w, l) (bag[j] != 0 && P_LANE(bag[j]) == (l) && \
		       P_TYPE(bag[j]) != T_FIN && P_TYPE(bag[j]) != T_FINACK && \
		       (P_RANK(bag[j]) == (w) || P_ALL(bag[j])))
#endif
#define LANE_QUIET(w, l) (!MINE(0, w, l) && !MINE(1, w, l) && !MINE(2, w, l) && \
			  !MINE(3, w, l) && !MINE(4, w, l) && !MINE(5, w, l) && \
			  !MINE(6, w, l) && !MINE(7, w, l))
#define CTL(j, w) (bag[j] != 0 && P_RANK(bag[j]) == (w) && \
		   (P_TYPE(bag[j]) == T_FIN || P_TYPE(bag[j]) == T_FINACK))
#define CTL_QUIET(w) (!CTL(0, w) && !CTL(1, w) && !CTL(2, w) && !CTL(3, w) && \
		      !CTL(4, w) && !CTL(5, w) && !CTL(6, w) && !CTL(7, w))

/* 1 when the switch holds worker w's answer for lane l's block and waits
 * on a peer: a timeout now is a slow peer's, not a loss's. */
#define HELD(w, l) (s_cur[l] == ln[(w) * NL + (l)].ver && \
		    sh[2 * (l) + s_cur[l]].state == H_AGG && \
		    sh[2 * (l) + s_cur[l]].round == e_round[w] && \
		    sh[2 * (l) + s_cur[l]].block == ln[(w) * NL + (l)].block && \
		    ((sh[2 * (l) + s_cur[l]].bitmap >> (w)) & 1))
#ifndef FAILOVER
#define TIMER(w, l) (e_phase[w] == E_RUNNING && !ln[(w) * NL + (l)].done && \
		     LANE_QUIET(w, l) && (slows < MAXSLOW || !HELD(w, l)))
#else
/* a resend to a crashed P changes nothing: the worker's next step is its
 * FAILOVER request (FAILOVER_DUE) */
#define TIMER(w, l) (e_phase[w] == E_RUNNING && !ln[(w) * NL + (l)].done && \
		     LANE_QUIET(w, l) && (slows < MAXSLOW || !HELD(w, l)) && \
		     (p_alive || e_sw[w]))
/* engine: packets outstanding, nothing from P for failover_ns: P is dead
 * (and so sends no WAIT) and nothing of the lane is in flight */
#define FAILOVER_DUE(w) (e_phase[w] == E_RUNNING && !e_sw[w] && !p_alive && LANE_QUIET(w, 0))
#endif

/* ina_block_next_nonzero(): worker w's first non-zero block of round r at
 * or after 'from' in from's lane (stepping by NL), or END. */
inline next_nonzero(w, r, from, res)
{
	res = from;
	do
	:: res >= NB -> res = END; break
	:: else ->
		if
		:: IN(w, r, res) != 0 -> break
		:: else -> res = res + NL
		fi
	od
}

/* The epoch and switch bits of what worker w sends (-DFAILOVER: to the
 * current switch, under its epoch) and of what the switch that runs a step
 * sends (P: epoch E; R after the takeover: E + 1). */
#ifdef FAILOVER
#define W_X(w) | XB(e_sw[w], e_sw[w])
#define S_X | XB(1 - p_alive, 1 - p_alive)
/* a packet for worker w is of its epoch (wrong_epoch otherwise); and from
 * its current switch (RESULTs always come from R) */
#define EP_OK(p, w) (P_EP(p) == e_sw[w])
#define SRC_OK(p, w) (P_EP(p) == e_sw[w] && P_ATR(p) == e_sw[w])
#else
#define W_X(w)
#define S_X
#define EP_OK(p, w) 1
#define SRC_OK(p, w) 1
#endif

/* engine.c build_data() and the engine_tx() that sends it. */
inline send_data(w, l)
{
	emit(MKPKT(T_DATA, w, l, e_round[w], ln[w * NL + l].block, ln[w * NL + l].my_next,
		  ln[w * NL + l].ver,
		  ln[w * NL + l].has_data * ((w) + 1), 0) W_X(w))
}

/* engine.c engine_allreduce(): sets every lane up and sends its opener
 * (f32: block = lane, with the payload if that block is non-zero). */
inline allreduce(w)
{
	e_phase[w] = E_RUNNING;
	e_got[w] = 0;
	e_lanes_left[w] = 0;
	y = 0;
	do
	:: y < NL ->
		/* ina_lane_active(): every lane has a block (NB >= NL) */
		ln[w * NL + y].done = 0;
		e_lanes_left[w]++;
		ln[w * NL + y].block = FIRST(y);	/* ina_lane_first() */
		next_nonzero(w, e_round[w], y, x);
#ifdef I32
		ln[w * NL + y].has_data = 0;	/* OPEN: header-only */
#else
		ln[w * NL + y].has_data = (x == y);
		if
		:: x == y -> next_nonzero(w, e_round[w], y + NL, x)
		:: else
		fi;
#endif
		ln[w * NL + y].my_next = x;
		send_data(w, y);
		y++
	:: else -> break
	od;
	x = 0;
	y = 0
}

/* A FIN to the current switch; while R stands by, also to R (best effort:
 * R's FIN_ACK is not awaited, so R does not send it in the model). */
inline send_fin(w)
{
	emit(MKPKT(T_FIN, w, 0, 0, 0, 0, 0, 0, 0) W_X(w));
#ifdef FAILOVER
	if
	:: !e_sw[w] -> emit(MKPKT(T_FIN, w, 0, 0, 0, 0, 0, 0, 0) | XB(0, 1))
	:: else
	fi
#endif
}

/* engine.c engine_finish() and tx_ctl(): the first FIN. */
inline finish(w)
{
	e_phase[w] = E_FINISHING;
	e_tries[w] = 1;
	send_fin(w)
}

/* engine.c on_result(), with the checks. 'pk' is a RESULT for 'me'. */
inline on_result()
{
	y = me * NL + P_LANE(pk);
	if
	:: e_phase[me] != E_RUNNING || ln[y].done || P_ROUND(pk) != e_round[me] ||
	   P_BLOCK(pk) != ln[y].block || P_VER(pk) != ln[y].ver || !EP_OK(pk, me) ->
		dropped = 1	/* stale */
	:: else ->
		/* on_result() fails the operation (INA_EPROTO) on a next
		 * pointer past the worker's own: it never happens */
		assert(P_NEXT(pk) <= ln[y].my_next);
		b = P_BLOCK(pk);
		if
		:: b == OPEN ->
			/* the answer to an OPEN: header-only, never DEFERRED */
			assert(P_VAL(pk) == 0 && !P_DEF(pk));
			z = P_LANE(pk)	/* zero_from */
		:: else ->
			/* never two results for one block */
			assert(!((e_got[me] >> b) & 1));
			e_got[me] = e_got[me] | (1 << b);
			x = SUM(e_round[me], b);
			if
			:: P_DEF(pk) ->
				/* header-only, and only for a sum under the
				 * bound; the worker keeps its own part
				 * (e->deferred[block] = 1) */
				assert(P_VAL(pk) == 0 && x > 0 && x < BOUND)
			:: else ->
				/* the sum, or header-only exactly when it is
				 * zero */
				assert(P_VAL(pk) == x && !(x > 0 && x < BOUND))
			fi;
			z = b + NL
		fi;
		/* the next pointer: the smallest next non-zero block of any
		 * worker from zero_from on */
		next_nonzero(0, e_round[me], z, x);
		next_nonzero(1, e_round[me], z, q);
		if
		:: q < x -> x = q
		:: else
		fi;
		assert(P_NEXT(pk) == x);
		/* ina_block_zero_range(): the skipped blocks are zero for
		 * every worker */
		x = z;
		z = 0;
		do
		:: x < P_NEXT(pk) ->
			assert(SUM(e_round[me], x) == 0 && !((e_got[me] >> x) & 1));
			e_got[me] = e_got[me] | (1 << x);
			x = x + NL
		:: else -> break
		od;
		ln[y].ver = 1 - ln[y].ver;
		if
		:: P_NEXT(pk) == END ->
			ln[y].done = 1;
			e_lanes_left[me]--;
			if
			:: e_lanes_left[me] == 0 ->
				/* finish_op(): every block of the round is
				 * accounted for; the caller's next allreduce
				 * or its ina_close() (FIN) follows */
				assert(e_got[me] == ALLBLK);
				e_round[me]++;
				e_phase[me] = E_READY;
				if
				:: e_round[me] < NR -> allreduce(me)
				:: else -> finish(me)
				fi
			:: else
			fi
		:: else ->
			ln[y].block = P_NEXT(pk);
			if
			:: ln[y].my_next == P_NEXT(pk) ->
				ln[y].has_data = 1;
				next_nonzero(me, e_round[me], P_NEXT(pk) + NL, x);
				ln[y].my_next = x
			:: else ->
				ln[y].has_data = 0
			fi;
			send_data(me, P_LANE(pk))	/* need_send, engine_tx() */
		fi
	fi;
	b = 0;
	x = 0;
	y = 0;
	q = 0
}

proctype worker(byte me)
{
	do
	/* engine_rx(): a packet for me, in any order */
	:: atomic {
		PICK(i, TO_WORKER);
		d_step {
		take(i);
		i = 0;
		dead = DEAD(pk);
		if
		:: P_TYPE(pk) == T_RESULT -> on_result()
		:: P_TYPE(pk) == T_WAIT ->
			/* on_wait(): a WAIT for the lane's block only
			 * restarts the lane's timer. The switch has my
			 * packet: I am not among the missing ranks */
			y = me * NL + P_LANE(pk);
			if
			:: e_phase[me] == E_RUNNING && !ln[y].done &&
			   P_ROUND(pk) == e_round[me] && P_BLOCK(pk) == ln[y].block &&
			   SRC_OK(pk, me) ->
				assert(!((P_VAL(pk) >> me) & 1) && P_VAL(pk) != 0)
			:: else -> dropped = 1	/* stale */
			fi;
			y = 0
		:: P_TYPE(pk) == T_FINACK ->
			if
			:: e_phase[me] == E_FINISHING && SRC_OK(pk, me) -> e_phase[me] = E_CLOSED
			:: else -> dropped = 1
			fi
#ifdef FAILOVER
		:: P_TYPE(pk) == T_FAILOVER ->
			/* R took over: switch to R, epoch E + 1, resend the
			 * in-flight DATA at once. Anything from P (or of
			 * epoch E) is refused from now on. */
			if
			:: !e_sw[me] ->
				e_sw[me] = 1;
				if
				:: e_phase[me] == E_RUNNING && !ln[me * NL].done ->
					send_data(me, 0)	/* resend */
				:: else
				fi
			:: else -> dropped = 1
			fi
#endif
		fi;
		/* gc() takes out only packets that are dropped (checked
		 * with -DNOGC, where they arrive) */
		assert(!dead || dropped);
		dead = 0;
		dropped = 0;
		pk = 0
		};
		transmit()
	   }
	/* engine_tx(): lane 0's timer fires, the packet is built again */
	:: atomic {
		TIMER(me, 0) ->
		d_step { slows = slows + HELD(me, 0); send_data(me, 0) };
		transmit()
	   }
#if NL > 1
	:: atomic {
		TIMER(me, 1) ->
		d_step { slows = slows + HELD(me, 1); send_data(me, 1) };
		transmit()
	   }
#endif
#ifdef FAILOVER
	/* nothing from P for failover_ns while packets are outstanding: ask
	 * R to take over (resent on the lane's backoff while unanswered) */
	:: atomic {
		FAILOVER_DUE(me) ->
		d_step { emit(MKPKT(T_FAILOVER, me, 0, 0, 0, 0, 0, 0, 0) | XB(0, 1)) };
		transmit()
	   }
#endif
	/* tx_ctl(): the FIN's timer: resend, or close after 4 tries */
	:: atomic {
		e_phase[me] == E_FINISHING && CTL_QUIET(me) ->
		d_step {
			if
			:: e_tries[me] >= 4 -> e_phase[me] = E_CLOSED
			:: else ->
				e_tries[me]++;
				send_fin(me)
			fi
		};
		transmit()
	   }
	:: e_phase[me] == E_CLOSED -> break
	od;
	/* a closed worker made every round */
	assert(e_round[me] == NR)
}

/* pipeline.c half_open() */
inline half_open(hh, r, blk)
{
	/* a half's key never goes back (gc() relies on it) */
	assert(KEY(r, blk) >= KEY(sh[hh].round, sh[hh].block));
	sh[hh].state = H_AGG;
	sh[hh].round = r;
	sh[hh].block = blk;
	sh[hh].bitmap = 0;
	sh[hh].has_data = 0;
	sh[hh].deferred = 0;
	sh[hh].bound = BOUND_NONE;
	sh[hh].next = END;
	sh[hh].acc = 0
}

/* pipeline.c put_result(): the result kept in half 'hh' to rank 'w' */
#ifndef FAILOVER
#define RESULT_PKT(w, l, hh) \
	MKPKT(T_RESULT, w, l, sh[hh].round, sh[hh].block, sh[hh].next, (hh) % 2, \
	      sh[hh].acc * (1 - sh[hh].deferred), sh[hh].deferred)
#define FANOUT(l, hh) emit(RESULT_PKT(0, l, hh)); emit(RESULT_PKT(1, l, hh))
#else
/* P sends every result as one REPL to R (a fan-out with the all bit); R
 * after the takeover sends RESULTs of epoch E + 1 itself. */
#define RESULT_PKT(w, l, hh) \
	(MKPKT(T_RESULT + (T_REPL - T_RESULT) * p_alive, w, l, sh[hh].round, sh[hh].block, \
	       sh[hh].next, (hh) % 2, sh[hh].acc * (1 - sh[hh].deferred), sh[hh].deferred) | \
	 XB(1 - p_alive, 1))
#define FANOUT(l, hh) \
	if \
	:: p_alive -> emit(RESULT_PKT(0, l, hh) | ALLBIT) \
	:: else -> emit(RESULT_PKT(0, l, hh)); emit(RESULT_PKT(1, l, hh)) \
	fi
#endif

/* pipeline.c handle_data(); 'pk' is a valid DATA of the job. */
inline handle_data()
{
	b = P_LANE(pk);			/* the slot */
	y = 2 * b + P_VER(pk);		/* hf = &s->h[ver] */
	if
	:: (job_finished >> P_RANK(pk)) & 1 ->
		dropped = 1	/* drop: after_fin */
	:: else -> if
	:: P_VER(pk) != s_cur[b] ->
		/* the shadow: a retransmission for a finished block */
		if
		:: sh[y].state == H_RESULT && sh[y].round == P_ROUND(pk) &&
		   sh[y].block == P_BLOCK(pk) ->
			emit(RESULT_PKT(P_RANK(pk), b, y))	/* shadow_replies */
		:: else -> dropped = 1	/* drop: no_match */
		fi
	:: else ->
		x = 1;		/* 0 once the packet is dropped */
		if
		:: sh[y].state == H_IDLE ->
			/* only a lane's first packet of a later round opens it */
			if
			:: P_BLOCK(pk) != FIRST(b) ||
			   (s_has_round[b] && P_ROUND(pk) <= s_last_round[b]) ->
				x = 0; dropped = 1	/* drop: no_match */
			:: else -> half_open(y, P_ROUND(pk), P_BLOCK(pk))
			fi
		:: sh[y].state != H_IDLE &&
		   (sh[y].round != P_ROUND(pk) || sh[y].block != P_BLOCK(pk)) ->
			x = 0; dropped = 1	/* drop: no_match */
		:: else
		fi;
		if
		:: x == 0
		:: x && ((sh[y].bitmap >> P_RANK(pk)) & 1) ->
			/* a duplicate: send_wait(). Its rate limit is not
			 * modelled: a WAIT only delays the sender's timer, so
			 * a duplicate dropped within wait_interval_ns is one
			 * whose WAIT arrives at once */
			emit(MKPKT(T_WAIT, P_RANK(pk), b, P_ROUND(pk), P_BLOCK(pk), END,
				   s_cur[b], FULL & ~sh[y].bitmap, 0) S_X)
		:: else ->
			/* half_add() */
			sh[y].bitmap = sh[y].bitmap | (1 << P_RANK(pk));
			/* build_data(): an OPEN carries bound 0 */
			z = BOUND * (P_BLOCK(pk) != OPEN);
			if
			:: z < sh[y].bound -> sh[y].bound = z
			:: else
			fi;
			z = 0;
			if
			:: P_VAL(pk) > 0 ->
				sh[y].acc = sh[y].acc + P_VAL(pk);
				sh[y].has_data = 1
			:: else
			fi;
			if
			:: P_NEXT(pk) < sh[y].next -> sh[y].next = P_NEXT(pk)
			:: else
			fi;
			if
			:: sh[y].bitmap == FULL ->
				/* complete: half_deferred(), the sum to every
				 * rank, the halves swap roles */
				sh[y].deferred = (sh[y].has_data && sh[y].bound != 0 &&
						  sh[y].bound != BOUND_NONE &&
						  sh[y].acc < sh[y].bound);
				sh[y].state = H_RESULT;
				FANOUT(b, y);
				s_cur[b] = 1 - P_VER(pk);
				if
				:: sh[y].next == END ->
					sh[2 * b + s_cur[b]].state = H_IDLE;
					assert(!s_has_round[b] ||
					       P_ROUND(pk) > s_last_round[b]);
					s_has_round[b] = 1;
					s_last_round[b] = P_ROUND(pk)
				:: else ->
					half_open(2 * b + s_cur[b], P_ROUND(pk), sh[y].next)
				fi
			:: else
			fi
		fi
	fi fi;
	b = 0;
	x = 0;
	y = 0
}

/* pipeline.c handle_fin() */
inline handle_fin()
{
	job_finished = job_finished | (1 << P_RANK(pk));
	job_linger = 1;
	emit(MKPKT(T_FINACK, P_RANK(pk), 0, 0, 0, 0, 0, 0, 0) S_X);
	if
	:: job_finished == FULL -> job_active = 0	/* job_free() */
	:: else
	fi
}

#ifdef FAILOVER
#ifdef I32
#define BLK0 OPEN	/* an idle half's key, as init sets it */
#else
#define BLK0 0
#endif
/* P crashes: everything it held is gone (the state is R's after the
 * takeover; until then nobody's). */
inline crash()
{
	p_alive = 0;
	job_active = 0;
	job_finished = 0;
	job_linger = 0;
	y = 0;
	do
	:: y < 2 * NL ->
		sh[y].state = H_IDLE;
		sh[y].round = 0;
		sh[y].block = BLK0;
		sh[y].bitmap = 0;
		sh[y].next = 0;
		sh[y].acc = 0;
		sh[y].bound = 0;
		sh[y].has_data = 0;
		sh[y].deferred = 0;
		y++
	:: else -> break
	od;
	y = 0;
	do
	:: y < NL ->
		s_cur[y] = 0;
		s_has_round[y] = 0;
		s_last_round[y] = 0;
		y++
	:: else -> break
	od;
	y = 0
}
#endif

proctype sw()
{
end:
	do
	/* pipeline_rx_burst() -> process_one(): a packet for the switch */
	:: atomic {
		PICK(i, FOR_P);
		d_step {
		take(i);
		i = 0;
		dead = DEAD(pk);
		if
		:: !job_active -> dropped = 1	/* drop: unknown_job */
		:: else ->
			if
			:: P_TYPE(pk) == T_DATA -> handle_data()
			:: else -> handle_fin()
			fi
		fi;
		/* gc() takes out only packets that are dropped (checked
		 * with -DNOGC, where they arrive) */
		assert(!dead || dropped);
		dead = 0;
		dropped = 0;
		pk = 0
		};
		transmit()
	   }
	/* The peer timeout (silent_ranks(), abort_job(): 8 s without a
	 * packet from a rank that a block waits on) never fires: a worker
	 * in an allreduce sends at least every rto_max (200 ms), and at most
	 * MAXDROP of its packets are lost. A worker between allreduces sends
	 * KEEPALIVEs (docs/PROTOCOL.md 3.10), which carry no block and only
	 * keep its heard time and the linger fresh: not modelled, as the
	 * worker's operation timeout (and a WAIT's LIVE status) is not. */
	/* pipeline_tick(): the linger runs out. Every packet of the job
	 * restarts it and a worker in an allreduce talks at least every
	 * rto_max, so it runs out only once no worker is in an allreduce. */
	:: atomic {
		job_active && job_linger && e_phase[0] != E_RUNNING && e_phase[1] != E_RUNNING ->
		job_active = 0;
		gc()
	   }
#ifdef FAILOVER
	/* P crashes, at any step, at most once */
	:: atomic {
		d_step { crash() };
		gc();
		break
	   }
#endif
	od
}

#ifdef FAILOVER
/* R's RESULT to rank w from a REPL (or stored result) p: type RESULT, rank
 * INA_RANK_SWITCH, epoch E, from R. A stored result is FWD(p, 0). */
#define FWD(p, w) (MKPKT(T_RESULT, w, P_LANE(p), P_ROUND(p), P_BLOCK(p), P_NEXT(p), P_VER(p), \
			 P_VAL(p), P_DEF(p)) | XB(0, 1))
/* R's FAILOVER announcement to rank w: the new epoch E + 1 */
#define ANNOUNCE(w) (MKPKT(T_FAILOVER, w, 0, 0, 0, 0, 0, 0, 0) | XB(1, 1))
/* the REPL p is newer than the stored result st (round, then block) */
#define NEWER(p, st) ((st) == 0 || KEY(P_ROUND(p), P_BLOCK(p)) > KEY(P_ROUND(st), P_BLOCK(st)))

/*
 * The replica's linger restarts on every packet of the job it receives. A
 * worker in an allreduce keeps it alive while it talks to R, or to a live P
 * (whose shadow replies reach R as REPL); after the takeover every worker
 * in an allreduce talks to R (or asks it again on the rto backoff). But a
 * worker still on a crashed P talks to nobody until it sends FAILOVER,
 * failover_ns after the last thing it heard. As the spec has it
 * (-DR_LINGER_SPEC: the standby job lingers linger_ms like any job), the
 * standby job's linger may run out then (once nothing is in flight to R: a
 * packet arrives well inside a linger); with the amendment (default: R's
 * linger covers failover_ns) it runs out only once no worker is in an
 * allreduce.
 */
#define R_TALKS(w) (e_phase[w] == E_RUNNING)
#ifdef R_LINGER_SPEC
#define R_TALKS_SB(w) (e_phase[w] == E_RUNNING && p_alive)
#define TO_R_J(j) (P_TYPE(bag[j]) == T_REPL || P_TYPE(bag[j]) == T_FAILOVER)
#define R_QUIET (!TO_R_J(0) && !TO_R_J(1) && !TO_R_J(2) && !TO_R_J(3) && \
		 !TO_R_J(4) && !TO_R_J(5) && !TO_R_J(6) && !TO_R_J(7))
#else
#define R_TALKS_SB(w) R_TALKS(w)
#define R_QUIET 1
#endif

/* pipeline.c, FAILOVER from a rank of a standby job: epoch E + 1, every
 * lane restored from its stored result (shadow = that result, the open block
 * = its next, or the idle half after END; no result: a fresh lane), then the
 * announcement to every rank. */
inline takeover()
{
	r_taken = 1;
	job_active = 1;
	job_finished = r_finished;
	job_linger = r_linger;
	r_active = 0;
	r_finished = 0;
	r_linger = 0;
	y = 0;
	do
	:: y < NL ->
		q = r_store[y];
		if
		:: q == 0	/* no result yet: the fresh lane crash() left */
		:: else ->
			x = 2 * y + P_VER(q);	/* the shadow is h[ver] */
			sh[x].state = H_RESULT;
			sh[x].round = P_ROUND(q);
			sh[x].block = P_BLOCK(q);
			sh[x].next = P_NEXT(q);
			sh[x].acc = P_VAL(q);
			sh[x].deferred = P_DEF(q);
			s_cur[y] = 1 - P_VER(q);
			if
			:: P_NEXT(q) == END ->
				/* the next round's opener opens the idle half */
				s_has_round[y] = 1;
				s_last_round[y] = P_ROUND(q)
			:: else ->
				s_has_round[y] = (P_ROUND(q) > 0);
				s_last_round[y] = P_ROUND(q) - s_has_round[y];
				half_open(2 * y + s_cur[y], P_ROUND(q), P_NEXT(q))	/* restore_open */
			fi;
			r_store[y] = 0
		fi;
		y++
	:: else -> break
	od;
	x = 0;
	y = 0;
	q = 0;
	emit(ANNOUNCE(0));
	emit(ANNOUNCE(1))
}

proctype rsw()
{
end:
	do
	:: atomic {
		PICK(i, FOR_R);
		d_step {
		take(i);
		i = 0;
		dead = DEAD(pk);
		if
		:: P_TYPE(pk) == T_REPL ->
			if
			:: !r_active || r_taken -> dropped = 1	/* unknown job, or old epoch */
			:: else ->
				/* store it if newer, then send it on */
				y = P_LANE(pk);
				if
				:: NEWER(pk, r_store[y]) -> r_store[y] = FWD(pk, 0)	/* store */
				:: else
				fi;
				if
				:: P_ALL(pk) -> emit(FWD(pk, 0)); emit(FWD(pk, 1))
				:: else -> emit(FWD(pk, P_RANK(pk)))
				fi;
				y = 0
			fi
		:: P_TYPE(pk) == T_FAILOVER ->
			if
			:: !r_taken && r_active -> takeover()
			:: r_taken && job_active ->
				emit(ANNOUNCE(P_RANK(pk)))	/* it missed the announcement */
			:: else -> dropped = 1	/* unknown_job */
			fi
		:: P_TYPE(pk) == T_FIN ->
			if
			:: !r_taken && r_active ->
				/* handle_fin() on the standby job; its FIN_ACK
				 * is not awaited (not sent in the model) */
				r_finished = r_finished | (1 << P_RANK(pk));
				r_linger = 1;
				if
				:: r_finished == FULL ->	/* job_free() */
					r_active = 0;
					r_finished = 0;
					r_linger = 0;
					r_store[0] = 0
				:: else
				fi
			:: r_taken && job_active && P_EP(pk) -> handle_fin()
			:: else -> dropped = 1	/* unknown job, or old epoch */
			fi
		:: P_TYPE(pk) == T_DATA ->
			if
			:: r_taken && job_active -> handle_data()
			:: else -> dropped = 1
			fi
		fi;
		assert(!dead || dropped);
		dead = 0;
		dropped = 0;
		pk = 0
		};
		transmit()
	   }
	/* pipeline_tick(): the standby job's linger runs out */
	:: atomic {
		!r_taken && r_active && r_linger && !R_TALKS_SB(0) && !R_TALKS_SB(1) && R_QUIET ->
		r_active = 0;
		r_finished = 0;
		r_linger = 0;
		r_store[0] = 0;
		gc()
	   }
	/* pipeline_tick(): the taken-over job's linger runs out */
	:: atomic {
		r_taken && job_active && job_linger && !R_TALKS(0) && !R_TALKS(1) ->
		job_active = 0;
		gc()
	   }
	od
}
#endif

#ifdef NET_PROCESS
/* The network as a process of its own (slower; transmit() does the same at
 * send time): any packet in flight may be lost (MAXDROP in all) or
 * duplicated (MAXDUP in all) at any time; delivery in any order is the
 * receivers' choice (PICK). */
proctype network()
{
end:
	do
	:: atomic { PICK(i, DROPPABLE); take(i); i = 0; pk = 0; drops++ }
	:: atomic { PICK(i, DUPLICABLE); q = bag[i]; i = 0; insert(q); q = 0; dups++ }
	/* for the liveness check under weak fairness: the network may stop
	 * making faults for good, so fairness never forces one */
	:: break
	od
}
#endif

/* The supports a worker may have in a round. */
byte pat;	/* select()'s variable (not hidden: the search undoes it) */
inline choose(s)
{
#if NPAT == 16
	select(pat : 0 .. 15);
	s = pat;
	pat = 0
#elif NPAT == 1
	s = 13
#elif NPAT == 2
	if
	:: s = 10	/* blocks 1 and 3 */
	:: s = 13	/* blocks 0, 2 and 3 */
	fi
#else
	if
	:: s = 0	/* nothing: an empty opener announcing END */
	:: s = 1	/* block 0 only */
	:: s = 10	/* blocks 1 and 3 */
	:: s = 13	/* blocks 0, 2 and 3 */
	fi
#endif
}

init
{
	atomic {
		assert(NW == 2 && NB == 4 && NR <= 2 && NL <= 2 && BAGN == 8);
#ifdef I32
		/* slots_reserve() zeroes an idle half's key, which nothing
		 * reads while the half is idle; OPEN, the smallest key, keeps
		 * half_open()'s check that keys never go back simple */
		sh[0].block = OPEN;
		sh[1].block = OPEN;
#if NL > 1
		sh[2].block = OPEN;
		sh[3].block = OPEN;
#endif
#endif
		choose(sup[0]);
		choose(sup[1]);
		choose(sup[2]);
		choose(sup[3]);
		allreduce(0);
		transmit();
		allreduce(1);
		transmit();
		run sw();
#ifdef FAILOVER
		assert(NL == 1);
		run rsw();
#endif
#ifdef NET_PROCESS
		run network();
#endif
		run worker(0);
		run worker(1)
	}
}

/* Every worker closes (after all NR rounds, asserted in worker()). */
ltl closes { <> (e_phase[0] == E_CLOSED && e_phase[1] == E_CLOSED) }
